"""`pip install ./python`: builds the _core module with CMake (the whole
project's CMakeLists.txt, one directory up) and installs the package.

Offline with Debian's packages: there is deliberately no pyproject.toml, so pip
(23.x) builds with the setuptools and wheel already installed (python3-setuptools,
python3-wheel) instead of downloading them into an isolated environment.
Debian's Python is "externally managed" (PEP 668): install into a virtual
environment (`python3 -m venv --system-site-packages VENV && VENV/bin/pip install
./python`) or pass --break-system-packages / --user.
"""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.join(os.path.abspath(self.build_temp), "cmake")
        os.makedirs(build_dir, exist_ok=True)
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
            "-DETCD_RECIPES_BUILD_TESTS=OFF", "-DETCD_RECIPES_BUILD_TOOLS=OFF", "-DETCD_RECIPES_BUILD_EXAMPLES=OFF",
            f"-DPython_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        subprocess.check_call(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "etcd_recipes_python", "-j", jobs])
        built = os.path.join(build_dir, "python", "etcd_recipes")
        target = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        os.makedirs(target, exist_ok=True)
        for f in os.listdir(built):
            if f.startswith("_core") and f.endswith(".so"):
                shutil.copy2(os.path.join(built, f), os.path.join(target, os.path.basename(self.get_ext_fullpath(ext.name))))


setup(
    name="etcd_recipes",
    version="0.1.0",
    description="etcd v3 coordination recipes (locks, elections, queues, caches, discovery) over a C++ client",
    packages=["etcd_recipes"],
    package_data={"etcd_recipes": ["py.typed", "*.pyi"]},
    ext_modules=[CMakeExtension("etcd_recipes._core")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.8",
    zip_safe=False,
)
