import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (tests run from build/test/). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
export const VECTORS = join(ROOT, "testdata", "vectors");
