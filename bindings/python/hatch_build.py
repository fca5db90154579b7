"""Build hook: compiles the extension, and bundles the library.

1. The extension (src/turnstate/_ext.c, the CPython C API) is compiled with
   the C compiler Python was built with (``CC`` overrides it) against this
   Python's headers and Include/turnstate.h (the repository's, or the copy
   an sdist carries in include/). It opens libturnstate with dlopen, so it
   does not link against it. The wheel is then tagged for this Python and
   platform (``cp311-cp311-linux_x86_64``). For an editable install the
   module is compiled into src/turnstate/.

2. The library. When the wheel is built from the repository (``pip install
   ./bindings/python``, or ``python -m build bindings/python``, whose sdist
   remembers the repository), it carries, under ``turnstate/_lib/``, the
   installed layout of ``make install`` (so the library's RUNPATH
   ``$ORIGIN/turnstate`` works unchanged)::

       turnstate/_lib/libturnstate.so.0          the library (SONAME file name)
       turnstate/_lib/turnstate/*.so             its private Swift runtime
       turnstate/_lib/turnstate/plugins/*.so     the shipped plugins: SHIPPED_PLUGINS
                                                 (what make install ships; not
                                                 the inspector, a development tool)

   When the repository has no built library yet, the hook runs ``make -C
   REPO lib plugins`` (the Swift toolchain is needed: a few minutes), and if
   that fails, the build fails with that command to run. Outside a
   repository (an sdist unpacked elsewhere, without TURNSTATE_BUILD) the
   wheel uses the system's library, and the build fails, saying what to do,
   when the system has none. Never a wheel that cannot load.

Environment:
  TURNSTATE_BUNDLE  ``auto`` (default): bundle the repository's library
                    (building it first if needed), else use the system's
                    (which must be there); ``0``: never bundle, no checks
                    (the package then uses TURNSTATE_LIB or the system's
                    library at run time); ``1``: bundle, and fail when there
                    is nothing to bundle (no build is run).
  TURNSTATE_BUILD   the build folder to bundle from (default: ``build`` at the
                    top of the repository).
  CC                the C compiler (default: the one Python was built with).
"""

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# The plugins make install ships (INSTALL_PLUGINS in the Makefile; the
# package's tests check that the two agree). build/plugins also holds the
# inspector, a development tool with an HTTP server that make install and
# the Debian packages leave out: a wheel leaves it out too, so
# load_plugin("inspector") cannot start it by its bare name.
SHIPPED_PLUGINS = ("guard", "delay", "journal", "recorder", "undo", "logger", "replicate")

# The file an sdist carries to remember the repository it was made from.
REPO_NOTE = ".turnstate-repository"


class BuildError(RuntimeError):
    pass


class CustomBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name == "sdist":
            self._note_repository(build_data)
            return
        if self.target_name != "wheel":
            return
        extension = self._compile(editable=version == "editable")
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if extension is not None:
            build_data["force_include"][str(extension)] = "turnstate/" + extension.name
        if version == "editable":
            return
        self._library(build_data)

    def finalize(self, version, build_data, artifact_path):
        temporary = getattr(self, "_temporary", None)
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)

    # ---- the repository -------------------------------------------------------

    def _repository(self):
        """The repository's top folder, or None: the one this folder is in,
        else the one the sdist was made from (if it is still there)."""
        here = Path(self.root).resolve()
        for candidate in (here.parent.parent, self._noted_repository()):
            if candidate is not None and (candidate / "Makefile").is_file() and \
                    (candidate / "Include" / "turnstate.h").is_file() and (candidate / "Sources").is_dir():
                return candidate
        return None

    def _noted_repository(self):
        note = Path(self.root, REPO_NOTE)
        if note.is_file():
            text = note.read_text(encoding="utf-8").strip()
            return Path(text) if text else None
        return None

    def _note_repository(self, build_data):
        here = Path(self.root).resolve()
        repository = here.parent.parent
        if not (repository / "Include" / "turnstate.h").is_file():
            return
        self._temporary = tempfile.mkdtemp(prefix="turnstate-sdist-")
        note = Path(self._temporary, REPO_NOTE)
        note.write_text(str(repository) + "\n", encoding="utf-8")
        build_data["force_include"][str(note)] = REPO_NOTE
        build_data["force_include"][str(repository / "Include" / "turnstate.h")] = "include/turnstate.h"

    # ---- 1. the extension -----------------------------------------------------

    def _compile(self, editable):
        source = Path(self.root, "src", "turnstate", "_ext.c")
        header = Path(self.root, "include", "turnstate.h")
        if not header.is_file():
            repository = self._repository()
            header = repository / "Include" / "turnstate.h" if repository else header
        if not header.is_file():
            raise BuildError("turnstate: Include/turnstate.h is needed to build the extension; build from the "
                             "repository, or from an sdist made by `python -m build` (it carries the header)")
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        if editable:
            target = source.parent / ("_ext" + suffix)
        else:
            self._temporary = getattr(self, "_temporary", None) or tempfile.mkdtemp(prefix="turnstate-ext-")
            target = Path(self._temporary, "_ext" + suffix)
        compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
        include = sysconfig.get_paths()["include"]
        command = compiler + ["-std=gnu11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
                              "-I" + include, "-I" + str(header.parent), str(source), "-o", str(target), "-ldl"]
        if not Path(include, "Python.h").is_file():
            raise BuildError("turnstate: the Python headers are missing (%s/Python.h): install them (Debian: "
                             "apt-get install python3-dev) to build the extension" % include)
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as error:
            raise BuildError("turnstate: cannot run the C compiler (%s): %s. Install one (Debian: apt-get "
                             "install gcc) or set CC" % (compiler[0], error)) from error
        if done.returncode != 0:
            raise BuildError("turnstate: compiling the extension failed:\n  %s\n%s"
                             % (" ".join(shlex.quote(part) for part in command), done.stdout))
        return None if editable else target

    # ---- 2. the library -------------------------------------------------------

    def _library(self, build_data):
        mode = os.environ.get("TURNSTATE_BUNDLE", "auto").strip().lower()
        if mode not in ("auto", "0", "1"):
            raise ValueError("TURNSTATE_BUNDLE must be auto, 0 or 1 (is %r)" % mode)
        if mode == "0":
            return
        repository = self._repository()
        if os.environ.get("TURNSTATE_BUILD"):
            build = Path(os.environ["TURNSTATE_BUILD"]).resolve()
        elif repository is not None:
            build = repository / "build"
        else:
            build = None
        library = build / "lib" / "libturnstate.so.0" if build is not None else None
        if library is not None and not library.is_file() and mode == "auto" and repository is not None \
                and not os.environ.get("TURNSTATE_BUILD"):
            self._make(repository)
        if library is not None and library.is_file():
            self._bundle(build, build_data)
            return
        if mode == "1":
            raise BuildError("turnstate: TURNSTATE_BUNDLE=1 but there is no built library at %s: run `make -C %s "
                             "lib plugins`, or set TURNSTATE_BUILD" % (library, repository or "REPOSITORY"))
        if library is not None:
            raise BuildError("turnstate: there is no built library at %s: run `make -C %s lib plugins`, or set "
                             "TURNSTATE_BUILD to a build folder that has one" % (library, build.parent))
        if not self._system_has_library():
            raise BuildError(
                "turnstate: this wheel would have no libturnstate: it is built outside the repository (no "
                "TURNSTATE_BUILD) and the system has no libturnstate.so.0. Build the library in the repository "
                "(`make -C REPOSITORY lib plugins`) and set TURNSTATE_BUILD=REPOSITORY/build, install it (`make "
                "install`, or the Debian package), or set TURNSTATE_BUNDLE=0 to build a wheel that needs "
                "TURNSTATE_LIB at run time")

    def _make(self, repository):
        command = ["make", "-C", str(repository), "lib", "plugins"]
        print("turnstate: no built library in %s/build: running %s (a few minutes)"
              % (repository, " ".join(command)), file=sys.stderr, flush=True)
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as error:
            raise BuildError("turnstate: cannot run `%s` (%s): run it yourself, or set TURNSTATE_BUNDLE=0 to use "
                             "an installed libturnstate" % (" ".join(command), error)) from error
        if done.returncode != 0:
            raise BuildError("turnstate: `%s` failed (it needs the Swift toolchain; see README.md, Building):\n%s\n"
                             "Run `%s` yourself, then install again; or set TURNSTATE_BUNDLE=0 to use an "
                             "installed libturnstate." % (" ".join(command), done.stdout[-3000:],
                                                          " ".join(command)))

    @staticmethod
    def _system_has_library():
        import ctypes  # the build only: the package itself does not use ctypes
        try:
            ctypes.CDLL("libturnstate.so.0")
            return True
        except OSError:
            return False

    @staticmethod
    def _bundle(build, build_data):
        library = build / "lib" / "libturnstate.so.0"
        files = {str(library.resolve()): "turnstate/_lib/libturnstate.so.0"}
        for path in sorted((build / "lib" / "turnstate").glob("*.so*")):
            files[str(path.resolve())] = "turnstate/_lib/turnstate/" + path.name
        plugins = build / "plugins"
        for name in SHIPPED_PLUGINS:
            path = plugins / (name + ".so")
            if path.is_file():
                files[str(path.resolve())] = "turnstate/_lib/turnstate/plugins/" + path.name
        build_data["force_include"].update(files)
