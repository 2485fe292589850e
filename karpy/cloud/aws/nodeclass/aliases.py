"""AMI aliases (``al2023@latest``, ``bottlerocket@1.20.3``, ``al2@v20240807``,
``windows2022@latest``): which public SSM parameters answer them, and what each answer
is good for.

EKS publishes one AMI per architecture and *variant*: the standard image, an NVIDIA
image for GPU instances and a Neuron image for Inferentia/Trainium. DescribeImages does
not say which is which, so the variant travels with the image id it came from and turns
into node requirements: the standard image excludes instances with GPUs or accelerators
(``instance-gpu-count`` and ``instance-accelerator-count`` DoesNotExist), the NVIDIA
image requires a GPU, the Neuron image an accelerator. The AL2 GPU image serves both
GPU and Neuron instances, hence two requirement sets for one image; Bottlerocket's
x86_64 standard image also carries the Neuron drivers. Windows images require
``kubernetes.io/os=windows`` and their build. The architecture is added per image from
DescribeImages.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.core import NodeSelectorRequirement
from karpy.apis.labels import (
    LABEL_AWS_INSTANCE_ACCELERATOR_COUNT,
    LABEL_AWS_INSTANCE_GPU_COUNT,
    LABEL_OS,
    LABEL_WINDOWS_BUILD,
)
from karpy.cloud.aws.nodeclass.conditions import Unresolved
from karpy.cloud.aws.nodeclass.ssm import ParameterKind

if TYPE_CHECKING:
    from karpy.cloud.aws.nodeclass.ssm import ParameterCache

__all__ = ["AliasError", "AliasImages", "Variant", "resolve_alias"]

Requirements = tuple[NodeSelectorRequirement, ...]

WINDOWS_BUILDS: Final = {"2019": "10.0.17763", "2022": "10.0.20348", "2025": "10.0.26100"}
_AL2_LAST_MINOR: Final = 32  # EKS publishes no AL2 AMIs from Kubernetes 1.33 on
_WINDOWS2025_FIRST_MINOR: Final = 35


class Variant(enum.Enum):
    STANDARD = "standard"
    NVIDIA = "nvidia"
    NEURON = "neuron"

    @property
    def requirements(self) -> Requirements:
        if self is Variant.STANDARD:
            return (
                NodeSelectorRequirement(LABEL_AWS_INSTANCE_ACCELERATOR_COUNT, "DoesNotExist"),
                NodeSelectorRequirement(LABEL_AWS_INSTANCE_GPU_COUNT, "DoesNotExist"),
            )
        if self is Variant.NVIDIA:
            return (NodeSelectorRequirement(LABEL_AWS_INSTANCE_GPU_COUNT, "Exists"),)
        return (NodeSelectorRequirement(LABEL_AWS_INSTANCE_ACCELERATOR_COUNT, "Exists"),)


class AliasError(Unresolved):
    """An alias that cannot be resolved (AMIsReady's reason and message)."""


@attrs.frozen(slots=True)
class AliasImages:
    """What an alias resolved to: image id → the requirement sets it serves (without
    the architecture, which DescribeImages gives)."""

    requirements: dict[str, tuple[Requirements, ...]]


def _al2023_paths(k8s: str, version: str) -> dict[str, tuple[Variant, ...]]:
    paths: dict[str, tuple[Variant, ...]] = {}
    for arch, variants in (
        ("x86_64", (Variant.STANDARD, Variant.NVIDIA, Variant.NEURON)),
        ("arm64", (Variant.STANDARD, Variant.NVIDIA)),
    ):
        for variant in variants:
            name = (
                "recommended"
                if version == "latest"
                else f"amazon-eks-node-al2023-{arch}-{variant.value}-{k8s}-{version}"
            )
            path = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant.value}"
            paths[f"{path}/{name}/image_id"] = (variant,)
    return paths


def _al2_paths(k8s: str, version: str) -> dict[str, tuple[Variant, ...]]:
    def name(kind: str) -> str:
        return "recommended" if version == "latest" else f"amazon-eks-{kind}node-{k8s}-{version}"

    base = f"/aws/service/eks/optimized-ami/{k8s}"
    return {
        f"{base}/amazon-linux-2/{name('')}/image_id": (Variant.STANDARD,),
        f"{base}/amazon-linux-2-arm64/{name('arm64-')}/image_id": (Variant.STANDARD,),
        f"{base}/amazon-linux-2-gpu/{name('gpu-')}/image_id": (Variant.NEURON, Variant.NVIDIA),
    }


def _bottlerocket_paths(k8s: str, version: str) -> dict[str, tuple[Variant, ...]]:
    version = version.lstrip("v")  # GitHub tags say v1.20.3, SSM paths 1.20.3
    base = f"/aws/service/bottlerocket/aws-k8s-{k8s}"
    return {
        f"{base}/x86_64/{version}/image_id": (Variant.STANDARD, Variant.NEURON),
        f"{base}/arm64/{version}/image_id": (Variant.STANDARD,),
        f"{base}-nvidia/x86_64/{version}/image_id": (Variant.NVIDIA,),
        f"{base}-nvidia/arm64/{version}/image_id": (Variant.NVIDIA,),
    }


_PATHS: Final = {"al2023": _al2023_paths, "al2": _al2_paths, "bottlerocket": _bottlerocket_paths}


def _minor(k8s_version: str) -> int | None:
    try:
        return int(k8s_version.split(".")[1])
    except (IndexError, ValueError):
        return None


async def resolve_alias(alias: str, k8s_version: str, params: ParameterCache) -> AliasImages:
    """The images ``alias`` (``family@version``) names on Kubernetes ``k8s_version``
    (``1.31``); `AliasError` when the alias is unsupported or no parameter answered."""
    family, _, version = alias.partition("@")
    kind = ParameterKind.LATEST if version == "latest" else ParameterKind.VERSIONED
    minor = _minor(k8s_version)
    if family == "al2" and minor is not None and minor > _AL2_LAST_MINOR:
        raise AliasError("UnsupportedAlias", "AL2 aliases are no longer supported on EKS "
                         f"1.33+ (cluster is {k8s_version})")  # fmt: skip
    release = family.removeprefix("windows")
    if family.startswith("windows") and release in WINDOWS_BUILDS:
        if release == "2025" and minor is not None and minor < _WINDOWS2025_FIRST_MINOR:
            raise AliasError("UnsupportedAlias", "Windows Server 2025 requires EKS version "
                             f"1.35 or higher, current version: {k8s_version}")  # fmt: skip
        path = (f"/aws/service/ami-windows-latest/Windows_Server-{release}-English-Core-"
                f"EKS_Optimized-{k8s_version}/image_id")  # fmt: skip
        image = await params.get(path, ParameterKind.LATEST)
        if image is None:
            raise _not_found(alias, k8s_version)
        windows = (
            NodeSelectorRequirement(LABEL_OS, "In", ("windows",)),
            NodeSelectorRequirement(LABEL_WINDOWS_BUILD, "In", (WINDOWS_BUILDS[release],)),
        )
        return AliasImages({image: (windows,)})
    paths = _PATHS.get(family)
    if paths is None:
        raise AliasError("UnsupportedAlias", f"unknown AMI alias family {family!r}")
    variants: dict[str, list[Variant]] = {}
    for path, path_variants in paths(k8s_version, version).items():
        image = await params.get(path, kind)
        if image is not None:
            found = variants.setdefault(image, [])
            found += [v for v in path_variants if v not in found]
    if not variants:
        raise _not_found(alias, k8s_version)
    return AliasImages({
        image: tuple(v.requirements for v in found) for image, found in variants.items()
    })  # fmt: skip


def _not_found(alias: str, k8s_version: str) -> AliasError:
    return AliasError(
        "AMINotFound",
        f'AMISelector did not match any AMIs: no SSM parameter answered for alias "{alias}" '
        f"on Kubernetes {k8s_version}",
    )
