"""The offline GPU wheelhouse, one idea per module (the command is scripts/gpu_wheelhouse.sh).

    basics      the error, the Dist record, sizes, sha256, pip's target-tag options
    target      what the wheelhouse is for: Python, platform, --present, the vLLM release
    tags        which of a release's wheels a CPython X.Y on manylinux x86_64 installs
    uv          the pinned uv and the resolve for a Python and platform uv need not run on
    pip_route   the interpreter route: pip's resolver run by a CPython of the target version
    sdists      a pure wheel built from a package that publishes only an sdist
    download    fetching the chosen files (pip download --no-deps, by sha256)
    build       resolve, download, the manifest; --resolve-only's lock and plan
    parts       --part-mib's parts, --join, and reading a manifest back
    cli         the flags and main()

Loaded by path as a package (scripts/gpu_wheelhouse.py), so its modules import one another
relatively; standard library only, since it runs before anything is installed.
"""
