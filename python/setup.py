"""The _core extension of `pip install ./python` (metadata: pyproject.toml).

build_ext runs CMake on the whole project: the directory above this one in a
source tree, or the copy of it that the sdist carries in _project/. The build
runs in an isolated environment with setuptools and pybind11 from PyPI; the
C++ build needs what the project needs (see the README). Environment:
  CMAKE_BUILD_PARALLEL_LEVEL   jobs (default 2)
  ETCD_RECIPES_BUILD_DIR       an existing CMake build of the project to build
                               the module in (configured already; e.g. the
                               test suite's own build) instead of a new one
Debian's Python is "externally managed" (PEP 668): install into a virtual
environment (`python3 -m venv VENV && VENV/bin/pip install ./python`).
"""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))

# What CMake needs of the project to build the module; an sdist carries these.
PROJECT_PARTS = ["CMakeLists.txt", "cmake", "include", "src", "proto", "testing", "python/CMakeLists.txt",
                 "python/src", "python/etcd_recipes"]


def project_root():
    for root in (os.path.dirname(HERE), os.path.join(HERE, "_project")):
        if all(os.path.exists(os.path.join(root, part)) for part in PROJECT_PARTS):
            return root
    raise RuntimeError("etcd_recipes: the C++ project is not here (build from the source tree, or from an sdist "
                       "made by `python -m build python`)")


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("ETCD_RECIPES_BUILD_DIR")
        if not build_dir:
            build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
            os.makedirs(build_dir, exist_ok=True)
            configure = [
                "cmake", "-S", project_root(), "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                "-DETCD_RECIPES_BUILD_TESTS=OFF", "-DETCD_RECIPES_BUILD_TOOLS=OFF", "-DETCD_RECIPES_BUILD_EXAMPLES=OFF",
                "-DETCD_RECIPES_BUILD_C_API=OFF", f"-DPython_EXECUTABLE={sys.executable}",
            ]
            try:  # pybind11 from the build environment (PyPI), else CMake finds the system's
                import pybind11
                configure.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
            except ImportError:
                pass
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
            if shutil.which("ccache"):
                configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
            subprocess.check_call(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "etcd_recipes_python", "-j", jobs])
        built = os.path.join(build_dir, "python", "etcd_recipes")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        modules = [f for f in os.listdir(built) if f.startswith("_core") and f.endswith(".so")]
        if len(modules) != 1:
            raise RuntimeError(f"etcd_recipes: expected one _core module in {built}, found {modules}")
        shutil.copy2(os.path.join(built, modules[0]), target)


class SdistWithProject(sdist):
    """The sdist carries the C++ project (PROJECT_PARTS) in _project/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root = project_root()
        ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
        for part in PROJECT_PARTS:
            src, dst = os.path.join(root, part), os.path.join(base_dir, "_project", part)
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=ignore)
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)


setup(
    ext_modules=[CMakeExtension("etcd_recipes._core")],
    cmdclass={"build_ext": CMakeBuild, "sdist": SdistWithProject},
)
