"""The torch_xla peer backends (torch 2.9.1 + torch_xla 2.9.0, PJRT CPU).

``torch_xla_lazy`` (:mod:`.lazy`)
    LazyTensor: runs in the ``xla`` environment (``.venv-xla``). Inputs live on
    ``torch_xla.device()``, each call ends with ``torch_xla.sync()``; compile
    counts come from ``torch_xla.debug.metrics`` (``UncachedCompile``).
``torch_xla_stablehlo`` (:mod:`.stablehlo_backend`)
    ``torch.export`` + ``torch_xla.stablehlo.exported_program_to_stablehlo``.
    The backend object runs in the ``main`` environment: its ``startup``
    starts an export server, ``.venv-xla/bin/python -m backends.torch_xla.export``,
    which imports torch and torch_xla (start-up, not the first call); the first
    call sends it the case to turn into StableHLO text, then every call runs
    that text with our executors (jax's refinement + XLA CPU, or the reference
    interpreter).

Nothing here imports torch or torch_xla at module level: ``dynshape list``
imports every backend module in the main environment, which has no torch_xla,
and the xla environment has no jax.
"""
