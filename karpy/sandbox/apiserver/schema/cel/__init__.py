"""CEL for ``x-kubernetes-validations``: a checker and closure compiler over celpy's
parser, with the libraries kube-apiserver enables for CRD rules."""

from __future__ import annotations

from karpy.sandbox.apiserver.schema.cel.compiler import CompiledExpression, compile_expression
from karpy.sandbox.apiserver.schema.cel.syntax import CelCompileError
from karpy.sandbox.apiserver.schema.cel.values import CelEvalError

__all__ = ["CelCompileError", "CelEvalError", "CompiledExpression", "compile_expression"]
