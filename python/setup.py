# SPDX-License-Identifier: MIT
"""Builds the pipezip wheel (pyproject.toml holds the metadata): the
version is the library's (the top CMakeLists.txt's project version), and
the library goes into the package (pipezip/libpipezip.so.0) when one is
found: $PIPEZIP_LIBRARY, else ../build/libpipezip.so.0 (cmake's build in
this source tree). Without one, the package records where an installed
library is ($PIPEZIP_PREFIX/lib, /usr/local/lib, /usr/lib) in
pipezip/_libpath.py; with none of them the install fails, naming what to
do, unless PIPEZIP_ALLOW_NO_LIBRARY=1 leaves it to the dynamic loader."""
import os
import re
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    env = os.environ.get("PIPEZIP_VERSION")
    if env:
        return env
    try:
        with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
            m = re.search(r"project\(\s*pipezip\s+VERSION\s+([0-9.]+)", f.read())
    except OSError:
        m = None
    if not m:
        raise SystemExit("pipezip: cannot tell the version: build from the source tree (python/ beside CMakeLists.txt) "
                         "or set PIPEZIP_VERSION")
    return m.group(1)


def built_library():
    env = os.environ.get("PIPEZIP_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise SystemExit(f"pipezip: PIPEZIP_LIBRARY={env}: no such file")
        return env
    p = os.path.join(ROOT, "build", "libpipezip.so.0")
    return p if os.path.exists(p) else None


def installed_library():
    prefixes = [os.environ.get("PIPEZIP_PREFIX"), "/usr/local", "/usr"]
    for pre in filter(None, prefixes):
        for lib in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            p = os.path.join(pre, lib, "libpipezip.so.0")
            if os.path.exists(p):
                return p
    return None


class BuildPy(build_py):
    def run(self):
        super().run()
        dst = os.path.join(self.build_lib, "pipezip")
        lib = built_library()
        if lib:
            shutil.copy2(os.path.realpath(lib), os.path.join(dst, "libpipezip.so.0"))
            print(f"pipezip: bundling {lib}")
            return
        lib = installed_library()
        if lib:
            with open(os.path.join(dst, "_libpath.py"), "w") as f:
                f.write(f"# written by setup.py: the installed library\nLIBRARY = {lib!r}\n")
            print(f"pipezip: using the installed {lib}")
        elif os.environ.get("PIPEZIP_ALLOW_NO_LIBRARY") == "1":
            print("pipezip: no libpipezip.so.0 bundled (PIPEZIP_ALLOW_NO_LIBRARY=1): the dynamic loader must find it at import")
        else:  # a package that cannot import is not an install: say so now, not at the first import
            raise SystemExit("pipezip: no libpipezip.so.0 to bundle or use: build it first (bash scripts/setup.sh, then "
                             "cmake -S . -B build && cmake --build build), or set PIPEZIP_LIBRARY=/path/to/libpipezip.so.0, "
                             "or PIPEZIP_PREFIX=the prefix it is installed in; PIPEZIP_ALLOW_NO_LIBRARY=1 leaves it to the "
                             "dynamic loader")


class Binary(Distribution):
    """the wheel carries a machine's shared library: tag it for the platform"""

    def has_ext_modules(self):
        return built_library() is not None


setup(version=version(), cmdclass={"build_py": BuildPy}, distclass=Binary)
