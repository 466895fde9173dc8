"""The reference implementations: a symbolic einx (``einx_symbolic``), a
torch.export to StableHLO lowering with XLA executors (``stablehlo``), a lazy
tensor with symbolic sizes (``lazy``), and the size algebra they share
(``sizes``). Engines import no adapter (``backends``), no ``cases`` and no
``harness``; this package imports nothing, so ``cases`` can use ``engines.sizes``
without loading an engine."""
