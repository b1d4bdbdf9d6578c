"""The rules every command applies, each defined once (standard library only): the sizing of workers, /dev/shm
and memory, the budgets, the loader defaults, the byte formatters and the CUDA wheel table. generate's plan,
``envkit doctor`` and the harness in the image all import them, so they cannot disagree."""
