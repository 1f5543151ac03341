"""The GPU machine's validation, one idea per module (the command is scripts/gpu_check.sh).

    arguments      the flags, --help (this package's user's guide) and the one-line refusals
    checkout       what is read from this checkout by path: the wheelhouse, stack.py's pins, the smoke summary
    machine        the GPUs nvidia-smi lists and the environment every check runs in
    runner         a check's command run with its log; a probe's JSON read back
    report         one check's entry, the summary line and DIR/gpu_check.json
    stack_check    the stack check: a usable interpreter found, or one installed (index or wheelhouse)
    engine_checks  async scheduling, the scale lane's engine tests, the V2 runner, bench_vllm
    launchers      the launchers' data and their 2 + 1 resumed GRPO steps, judged from the run's files
    checks         the checks in order, and why one did not run
    proofs         what gpu_check must prove (issue 61), each implemented or "not implemented yet"
    cli            main(): arguments, the GPU, the wheelhouse's join, the checks, the report

Loaded by path as a package (scripts/gpu_check.py), so its modules import one another
relatively; standard library only, since it runs before the stack is installed.
"""
