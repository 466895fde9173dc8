"""Peer compilers that take symbolic dims: TVM Relax, IREE, ONNX Runtime and
OpenVINO, each one module (system code as plain functions, then the backend)
on :mod:`backends.peers.common`."""
