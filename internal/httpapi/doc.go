// Package httpapi serves chiod's HTTP API (SPEC §6) over a kernel.Kernel:
// strict, size-limited decoding, route-level authorization that fails
// closed, and the stable error envelope {"error": code, "message": text}.
package httpapi
