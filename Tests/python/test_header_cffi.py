"""The C header is readable by cffi, the way Python bindings consume it:
preprocessed, its declarations go through cffi's C parser unchanged, and
every function resolves in the built library. Skipped when cffi is not
installed (it is not part of the standard library)."""
import os
import re
import subprocess
import unittest

try:
    import cffi
except ImportError:  # pragma: no cover
    cffi = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.environ.get("TURNSTATE_LIB", os.path.join(ROOT, "build", "lib", "libturnstate.so"))


def c_std():
    """The C standard flag: the Makefile's (its one place), exported as
    TS_C_STD under make; asked of `make flags` when run alone."""
    std = os.environ.get("TS_C_STD")
    if not std:
        out = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "flags"],
                             capture_output=True, text=True, check=True).stdout
        std = re.search(r"^TS_C_STD='(.*)'$", out, re.M).group(1)
    return std.split()


@unittest.skipIf(cffi is None, "cffi is not installed")
class HeaderReadableByCffi(unittest.TestCase):
    def test_cffi_parses_both_headers_and_binds_every_function(self):
        # cffi's parser reads no attributes: TS_API and TS_DEPRECATED are
        # defined empty, as turnstate.h says a binding generator may.
        text = subprocess.run(
            ["cc", "-E", "-P", *c_std(), "-DTS_API=", "-DTS_DEPRECATED(msg)=", "-I", os.path.join(ROOT, "Include"),
             os.path.join(ROOT, "Include", "turnstate_plugin.h")],
            capture_output=True, text=True, check=True).stdout
        lines = [line for line in text.splitlines() if line.strip()]
        # Our declarations start at the first one of ours; what comes before
        # is the system headers' (stdint, stddef), which cffi knows already.
        start = next(i for i, line in enumerate(lines) if "ts_" in line)
        ffi = cffi.FFI()
        ffi.cdef("\n".join(lines[start:]))
        lib = ffi.dlopen(LIB)
        self.assertEqual(ffi.string(lib.ts_version_string()).decode().count("."), 2)
        self.assertEqual(ffi.string(lib.ts_status_name(-2)), b"TS_E_JSON")
        store = ffi.new("ts_store **")
        self.assertEqual(lib.ts_store_create(b'{"n": 18446744073709551615}', store), 0)
        out = ffi.new("char **")
        self.assertEqual(lib.ts_store_get_state(store[0], b"/n", out), 0)
        self.assertEqual(ffi.string(out[0]), b"18446744073709551615")
        lib.ts_free(out[0])
        lib.ts_store_destroy(store[0])
        copy = lib.ts_strdup(b"text")
        self.assertEqual(ffi.string(copy), b"text")
        lib.ts_free(copy)
        zero = lib.ts_alloc(0)
        self.assertNotEqual(zero, ffi.NULL)
        lib.ts_free(zero)
        self.assertEqual(lib.ts_reducer_fail(b"outside"), -14)  # TS_E_MISUSE
        self.assertGreaterEqual(ffi.sizeof("ts_store_api"), 7 * ffi.sizeof("void *"))
        self.assertEqual(ffi.sizeof("ts_action"), 3 * ffi.sizeof("void *"))


if __name__ == "__main__":
    unittest.main()
