"""Member names of one object that differ only in letter case are refused,
as chiod refuses them (Unicode simple case folding, Go's strings.EqualFold);
testdata/vectors/canonical.json holds the shared cases."""

import unittest

from chio import CanonicalJSONError, RawJSON, canonicalize
from chio._casefold_table import ORBITS, UNICODE_VERSION
from chio.canon import canonicalize_text, jcs, loads_strict
from chio.casefold import check_member_case, fold_key, may_fold
from chio.signing import parameter_hash


class FoldingTable(unittest.TestCase):
    def test_hand_picked_orbits(self):
        # Written out by hand from the Unicode data, not from the table.
        for orbit in (
            (0x41, 0x61),  # A a
            (0x4B, 0x6B, 0x212A),  # K k KELVIN SIGN
            (0x53, 0x73, 0x17F),  # S s LATIN SMALL LETTER LONG S
            (0xB5, 0x39C, 0x3BC),  # MICRO SIGN, Greek capital and small mu
            (0xC5, 0xE5, 0x212B),  # Å å ANGSTROM SIGN
            (0xDF, 0x1E9E),  # ß ẞ
            (0x3A3, 0x3C2, 0x3C3),  # Σ ς σ
            (0x398, 0x3B8, 0x3D1, 0x3F4),  # Θ θ ϑ ϴ
            (0x13A0, 0xAB70),  # Cherokee A, capital and small
            (0x10400, 0x10428),  # Deseret long I, beyond the BMP
        ):
            with self.subTest(orbit=[hex(c) for c in orbit]):
                self.assertIn(orbit, ORBITS)
                keys = {fold_key(chr(c)) for c in orbit}
                self.assertEqual(keys, {chr(orbit[0])}, "every member folds to the least")

    def test_code_points_that_fold_only_to_themselves(self):
        # Dotless ı and dotted İ have full case mappings to i/I but no simple
        # folding; digits, "_", CJK and emoji have none at all.
        for c in ("\u0131", "\u0130", "1", "_", "\u4e2d", "\U0001F600"):
            with self.subTest(c):
                self.assertEqual(fold_key(c), c)
        self.assertEqual(fold_key("i"), "I")
        # ß has no one-code-point fold to "ss" (str.casefold has).
        self.assertNotEqual(fold_key("ss"), fold_key("\u00df"))

    def test_table_is_well_formed(self):
        self.assertEqual(UNICODE_VERSION, "15.0.0")
        self.assertGreater(len(ORBITS), 1000)
        seen = set()
        for orbit in ORBITS:
            self.assertGreaterEqual(len(orbit), 2)
            self.assertEqual(list(orbit), sorted(orbit))
            self.assertTrue(seen.isdisjoint(orbit), orbit)
            seen.update(orbit)
            # The pre-check is sound: at most one member escapes may_fold.
            self.assertLessEqual(sum(not may_fold(chr(c)) for c in orbit), 1, orbit)

    def test_may_fold(self):
        self.assertFalse(may_fold("max_amount"))
        self.assertFalse(may_fold("x-1"))
        self.assertTrue(may_fold("Units"))
        self.assertTrue(may_fold("unit\u017f"))
        self.assertTrue(may_fold("caf\u00e9"))


class Refused(unittest.TestCase):
    def refused(self, f, *args):
        with self.assertRaises(CanonicalJSONError) as cm:
            f(*args)
        self.assertEqual(cm.exception.reason, "duplicate_key", str(cm.exception))
        return str(cm.exception)

    def test_python_values(self):
        for value in (
            {"a": 1, "A": 2},
            {"units": 100, "unit\u017f": 9000000},
            {"k": 1, "\u212a": 2},
            {"\u03c3": 1, "\u03c2": 2},
            {"x": {"cost": 1, "co\u017ft": 999999}},
            {"l": [{"ok": 1}, ({"id": 1, "ID": 2},)]},
            {"a": RawJSON('{"b":1}'), "A": 2},
        ):
            with self.subTest(value=ascii(value)):
                self.refused(canonicalize, value)
        # What an agent hashes and signs: refused before chiod would.
        self.refused(parameter_hash, "payment-server", "issue_refund", {"amount": 1, "AMOUNT": 9}, None)
        self.refused(
            parameter_hash, "payment-server", "issue_refund", {}, {"max_amount": {"units": 100, "unit\u017f": 9000000}}
        )

    def test_error_names_both_members_visibly(self):
        msg = self.refused(canonicalize_text, '{"units":100,"unit\\u017f":9000000}')
        self.assertIn("'units'", msg)
        self.assertIn("'unit\\u017f'", msg)

    def test_raw_json_and_strict_parse(self):
        self.refused(RawJSON, '{"Decision":"approved","decision":"denied"}')
        self.refused(loads_strict, b'{"\\ud801\\udc00":1,"\\ud801\\udc28":2}')

    def test_wide_object(self):
        wide = {f"m{i}": i for i in range(100)}
        self.refused(canonicalize, {**wide, "M57": 1})
        self.refused(canonicalize, {"units": 1, **wide, "UNITS": 2})
        canonicalize({**wide, "M": 1})

    def test_other_refusals_come_first(self):
        # As chiod: the case pass runs only on otherwise valid text.
        with self.assertRaises(CanonicalJSONError) as cm:
            loads_strict('{"a":1,"A":2,"n":[9007199254740993]}')
        self.assertEqual(cm.exception.reason, "unsafe_number")
        with self.assertRaises(CanonicalJSONError) as cm:
            loads_strict('{"a":1,"A":2,"s":"\\udc00"}')
        self.assertEqual(cm.exception.reason, "invalid")


class Accepted(unittest.TestCase):
    def test_distinct_names(self):
        for value, want in (
            ({"ab": 1, "ba": 2}, b'{"ab":1,"ba":2}'),
            ({"ss": 1, "\u00df": 2}, '{"ss":1,"\u00df":2}'.encode()),
            ({"i": 1, "\u0131": 2, "\u0130": 3}, '{"i":1,"\u0130":3,"\u0131":2}'.encode()),
            ({"a": 1, "b": {"A": 2}, "c": [{"A": 3}, {"a": 4}]}, b'{"a":1,"b":{"A":2},"c":[{"A":3},{"a":4}]}'),
            ({"Units": 1, "currency": "USD"}, b'{"Units":1,"currency":"USD"}'),
        ):
            with self.subTest(value=ascii(value)):
                self.assertEqual(canonicalize(value), want)

    def test_plain_jcs_has_no_chio_rules(self):
        self.assertEqual(jcs({"a": 1, "A": 2}), b'{"A":2,"a":1}')

    def test_check_member_case_directly(self):
        check_member_case([])
        check_member_case(["a", "b", "\u00e9"])
        with self.assertRaises(CanonicalJSONError):
            check_member_case(["\u00e9", "\u00c9"])


if __name__ == "__main__":
    unittest.main()
