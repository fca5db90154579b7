"""Wheel build hook: bundles the library built in this repository.

When the wheel is built from the repository (``pip install ./bindings/python``,
``python -m build --wheel bindings/python``), and ``make lib plugins`` has
run, the wheel carries, under ``turnstate/_lib/``, the installed layout of
``make install`` (so the library's RUNPATH ``$ORIGIN/turnstate`` works
unchanged)::

    turnstate/_lib/libturnstate.so.0          the library (SONAME file name)
    turnstate/_lib/turnstate/*.so             its private Swift runtime
    turnstate/_lib/turnstate/plugins/*.so     the shipped plugins: SHIPPED_PLUGINS
                                              (what make install ships; not
                                              the inspector, a development tool)

Such a wheel holds machine code, so it is tagged ``py3-none-<platform>``
(``py3-none-linux_x86_64`` here): any Python 3 (the binding is ctypes, no
extension module), this platform only. Without a built library the wheel is
pure Python (``py3-none-any``) and uses the system's library.

Environment:
  TURNSTATE_BUNDLE  ``auto`` (default): bundle when the repository has a built
                    library; ``0``: never (use the system's or TURNSTATE_LIB);
                    ``1``: bundle, and fail when there is nothing to bundle.
  TURNSTATE_BUILD   the build folder to bundle from (default: ``build`` at the
                    top of the repository). Needed when the wheel is built
                    from an unpacked sdist (``python -m build`` without
                    ``--wheel``), which is not inside the repository.
"""

import os
import sysconfig
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# The plugins make install ships (INSTALL_PLUGINS in the Makefile; the
# package's tests check that the two agree). build/plugins also holds the
# inspector, a development tool with an HTTP server that make install and
# the Debian packages leave out: a wheel leaves it out too, so
# load_plugin("inspector") cannot start it by its bare name.
SHIPPED_PLUGINS = ("guard", "delay", "journal", "logger", "replicate")


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel" or version == "editable":
            return
        mode = os.environ.get("TURNSTATE_BUNDLE", "auto").strip().lower()
        if mode not in ("auto", "0", "1"):
            raise ValueError("TURNSTATE_BUNDLE must be auto, 0 or 1 (is %r)" % mode)
        if mode == "0":
            return
        build = Path(os.environ.get("TURNSTATE_BUILD") or Path(self.root, "..", "..", "build")).resolve()
        library = build / "lib" / "libturnstate.so.0"
        runtime = build / "lib" / "turnstate"
        if not library.is_file():
            if mode == "1":
                raise FileNotFoundError(
                    "TURNSTATE_BUNDLE=1 but there is no built library at %s: run `make lib plugins` "
                    "at the top of the repository, or set TURNSTATE_BUILD" % library)
            return
        files = {str(library.resolve()): "turnstate/_lib/libturnstate.so.0"}
        for path in sorted(runtime.glob("*.so*")):
            files[str(path.resolve())] = "turnstate/_lib/turnstate/" + path.name
        plugins = build / "plugins"
        for name in SHIPPED_PLUGINS:
            path = plugins / (name + ".so")
            if path.is_file():
                files[str(path.resolve())] = "turnstate/_lib/turnstate/plugins/" + path.name
        build_data["force_include"].update(files)
        build_data["pure_python"] = False
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        build_data["tag"] = "py3-none-" + platform
