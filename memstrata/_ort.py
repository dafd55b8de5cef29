"""ONNX Runtime's exception types, for the packages that run graphs (the embedders in
:mod:`memstrata.memory`, the reader model in :mod:`memstrata.reading`)."""

from __future__ import annotations

__all__ = ["ort_errors"]

_ORT_ERROR_NAMES = ("EPFail", "EngineError", "Fail", "InvalidArgument", "InvalidGraph",
                    "InvalidProtobuf", "ModelLoaded", "NoModel", "NoSuchFile", "NotFound",
                    "NotImplemented", "RuntimeException")


def ort_errors() -> tuple[type[BaseException], ...]:
    """ONNX Runtime's exception types (they derive from ``Exception`` directly), plus the
    builtin ones its Python layer raises - what a broken or foreign graph can throw."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = [getattr(state, name, None) for name in _ORT_ERROR_NAMES]
    return (RuntimeError, ValueError, TypeError,
            *(t for t in found if isinstance(t, type) and issubclass(t, Exception)))
