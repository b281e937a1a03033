"""Build of the optional C extension ``rocketq._native`` (everything else is in pyproject.toml).

setuptools reads the project's metadata from pyproject.toml; only ``ext_modules`` needs code.
The extension is optional: where it cannot be compiled, the install still succeeds and rocketq
runs its pure-Python codecs (rocketq/protocol/nativecodecs.py logs which are in use).
"""

from setuptools import Extension, setup

NATIVE_SOURCES = ["module.c", "crc32.c", "javahash.c", "properties.c", "batchbodies.c", "records.c", "frames.c",
                  "headers.c", "attributes.c", "inplace.c", "indexput.c",
                  "putfields.c", "pulled.c", "batchappend.c", "crc32fold.c", "clientsend.c",
                  "sendanswer.c", "groupappend.c", "plainsend.c", "unitruns.c",
                  "pullanswer.c", "jsonheader.c", "foundframe.c"]

setup(
    ext_modules=[
        Extension(
            "rocketq._native",
            sources=[f"native/{name}" for name in NATIVE_SOURCES],
            depends=["native/rocketq_native.h"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers"],
            optional=True,
        ),
    ],
)
