"""setup.py - the part of `pip install ./python` that pyproject.toml cannot
say: build libringfeed with CMake and put it inside the package, so the
installed package needs no PYTHONPATH, RINGFEED_LIBRARY or system library.

RINGFEED_SOURCE_DIR: the repository (default: the folder above this file).
RINGFEED_BUILD_DIR:  a CMake build folder to configure (or reuse when it is
                     already configured); default: setuptools' build_temp.
RINGFEED_BUILD_JOBS: parallel build jobs (default 2).
"""

import os
import pathlib
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = pathlib.Path(__file__).resolve().parent


def _source_dir():
    src = pathlib.Path(os.environ.get("RINGFEED_SOURCE_DIR") or HERE.parent)
    if not (src / "CMakeLists.txt").is_file() or not (src / "include" / "ringfeed.h").is_file():
        raise SystemExit(
            f"ringfeed: {src} is not the ringfeed repository (no CMakeLists.txt and "
            "include/ringfeed.h); set RINGFEED_SOURCE_DIR"
        )
    return src


class BuildWithLibrary(build_py):
    """build_py, then CMake's libringfeed.so copied into the package."""

    def run(self):
        super().run()
        src = _source_dir()
        build = os.environ.get("RINGFEED_BUILD_DIR")
        build = pathlib.Path(build) if build else pathlib.Path(self.build_temp_dir()) / "cmake"
        if not (build / "CMakeCache.txt").is_file():
            subprocess.run(
                ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 "-DRF_TESTS=OFF", "-DRF_PYTHON=OFF", "-DRF_WERROR=OFF"],
                check=True,
            )
        jobs = os.environ.get("RINGFEED_BUILD_JOBS", "2")
        subprocess.run(
            ["cmake", "--build", str(build), "--target", "ringfeed", "-j", jobs], check=True
        )
        lib = build / "libringfeed.so"
        if not lib.exists():
            raise SystemExit(f"ringfeed: the CMake build made no {lib}")
        dest = pathlib.Path(self.build_lib) / "ringfeed" / "libringfeed.so"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lib.resolve(), dest)  # the file, not the symlink chain

    def build_temp_dir(self):
        return self.get_finalized_command("build").build_temp


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibrary}, distclass=BinaryDistribution)
