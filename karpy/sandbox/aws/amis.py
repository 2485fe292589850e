"""The EKS-optimized AMIs an account sees, and the public SSM parameters that name them.

Karpenter resolves an alias (``al2023@latest``, ``bottlerocket@v1.26.2``, ``al2@v20241109``)
by reading public SSM parameters under ``/aws/service/...`` and then describing the images
they name. moto ships neither the EKS or Bottlerocket images nor those parameters, and
refuses ``PutParameter`` under ``/aws/`` as AWS does. So the sandbox registers images with
the names and architectures AWS publishes (RegisterImage, then sets what moto's
RegisterImage ignores — architecture, owner, creation date, root device — on the backend
object) and writes the parameters into moto's SSM backend in-process, at exactly the
paths Karpenter's AMI families read (``pkg/providers/amifamily/{al2023,bottlerocket,al2}.go``).

Two releases of every family are published, an older one and a newer one; ``latest`` /
``recommended`` point at the newer, so a NodeClass pinned to the older version, or a
change of ``latest``, can be tested.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Final

import attrs
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.ssm.models import Parameter, ssm_backends

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["AMI_RELEASES", "ImageSpec", "eks_images", "publish_parameters", "register_images"]

EKS_OWNER: Final = "602401143452"
BOTTLEROCKET_OWNER: Final = "092701018921"


@attrs.frozen(slots=True)
class Release:
    """One release of an AMI family: its version as aliases spell it, and its date."""

    version: str
    date: datetime.datetime


def _day(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y%m%d").replace(tzinfo=datetime.UTC)


# Oldest first: the last is what ``latest`` / ``recommended`` point at.
AMI_RELEASES: Final[dict[str, tuple[Release, ...]]] = {
    "al2023": (Release("v20241024", _day("20241024")), Release("v20241109", _day("20241109"))),
    "al2": (Release("v20241024", _day("20241024")), Release("v20241109", _day("20241109"))),
    "bottlerocket": (Release("v1.26.1", _day("20241030")), Release("v1.26.2", _day("20241112"))),
}
BOTTLEROCKET_COMMITS: Final = {"v1.26.1": "943d9a41", "v1.26.2": "360b7a38"}


@attrs.frozen(slots=True)
class ImageSpec:
    """An image to register: ``key`` is the `Account.amis` family key (``al2023``,
    ``al2023-nvidia``, ``bottlerocket``, ``al2-gpu``, ...), ``parameters`` the SSM names
    whose value is its id."""

    key: str
    architecture: str
    name: str
    owner: str
    release: Release
    latest: bool
    parameters: tuple[str, ...]


def _al2023(k8s: str, release: Release, latest: bool) -> Iterator[ImageSpec]:
    base = f"/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023"
    for arch, variants in (("x86_64", ("standard", "nvidia", "neuron")),
                           ("arm64", ("standard", "nvidia"))):  # fmt: skip
        for variant in variants:
            name = f"amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{release.version}"
            paths = [f"{base}/{arch}/{variant}/{name}/image_id"]
            if latest:
                paths.append(f"{base}/{arch}/{variant}/recommended/image_id")
            key = "al2023" if variant == "standard" else f"al2023-{variant}"
            yield ImageSpec(key, arch, name, EKS_OWNER, release, latest, tuple(paths))


def _bottlerocket(k8s: str, release: Release, latest: bool) -> Iterator[ImageSpec]:
    commit = BOTTLEROCKET_COMMITS[release.version]
    for arch, image_arch in (("x86_64", "x86_64"), ("arm64", "aarch64")):
        for nvidia in (False, True):
            flavour = f"aws-k8s-{k8s}-nvidia" if nvidia else f"aws-k8s-{k8s}"
            name = f"bottlerocket-{flavour}-{image_arch}-{release.version}-{commit}"
            base = f"/aws/service/bottlerocket/{flavour}/{arch}"
            paths = [f"{base}/{release.version.lstrip('v')}/image_id"]
            if latest:
                paths.append(f"{base}/latest/image_id")
            key = "bottlerocket-nvidia" if nvidia else "bottlerocket"
            yield ImageSpec(key, arch, name, BOTTLEROCKET_OWNER, release, latest, tuple(paths))


def _al2(k8s: str, release: Release, latest: bool) -> Iterator[ImageSpec]:
    base = f"/aws/service/eks/optimized-ami/{k8s}"
    for key, arch, tree, prefix in (
        ("al2", "x86_64", "amazon-linux-2", "amazon-eks-node"),
        ("al2", "arm64", "amazon-linux-2-arm64", "amazon-eks-arm64-node"),
        ("al2-gpu", "x86_64", "amazon-linux-2-gpu", "amazon-eks-gpu-node"),
    ):
        name = f"{prefix}-{k8s}-{release.version}"
        paths = [f"{base}/{tree}/{name}/image_id"]
        if latest:
            paths.append(f"{base}/{tree}/recommended/image_id")
        yield ImageSpec(key, arch, name, EKS_OWNER, release, latest, tuple(paths))


def eks_images(k8s_version: str) -> list[ImageSpec]:
    """Every image of every family and release, for ``k8s_version``."""
    images: list[ImageSpec] = []
    for family, build in (("al2023", _al2023), ("bottlerocket", _bottlerocket), ("al2", _al2)):
        releases = AMI_RELEASES[family]
        for index, release in enumerate(releases):
            images.extend(build(k8s_version, release, index == len(releases) - 1))
    return images


def register_images(
    region: str, images: list[ImageSpec], account_id: str = DEFAULT_ACCOUNT_ID
) -> dict[ImageSpec, str]:
    """Register ``images`` on the in-process moto's EC2 backend, complete as EKS publishes
    them; returns their ids. Straight on the backend, as moto's RegisterImage handler
    itself calls it (with the name and description only): 24 images through the API cost
    every seeded account a quarter of a second of CPU, every AWS test paying it."""
    backend = ec2_backends[account_id][region]
    ids: dict[ImageSpec, str] = {}
    for spec in images:
        image = backend.register_image(spec.name, f"EKS-optimized image {spec.name}")
        image_id = image.id
        image.architecture = spec.architecture
        image.owner_id = spec.owner
        image.owner_alias = "amazon"
        image.virtualization_type = "hvm"
        image.hypervisor = "xen"
        image.root_device_type = "ebs"
        image.root_device_name = "/dev/xvda"
        image.creation_date = spec.release.date
        image.launch_permissions.append({"Group": "all"})
        ids[spec] = image_id
    return ids


def publish_parameters(ids: dict[ImageSpec, str], region: str,
                       account_id: str = DEFAULT_ACCOUNT_ID) -> None:  # fmt: skip
    """Write each image's public SSM parameters into moto's SSM backend (module docstring)."""
    parameters = ssm_backends[account_id][region]._parameters
    for spec, image_id in ids.items():
        for name in spec.parameters:
            parameters[name].append(
                Parameter(  # type: ignore[abstract]  # moto's CloudFormation hooks
                    account_id=account_id,
                    name=name,
                    value=image_id,
                    parameter_type="String",
                    description=None,
                    allowed_pattern=None,
                    keyid=None,
                    last_modified_date=spec.release.date,
                    version=len(parameters[name]) + 1,
                    data_type="aws:ec2:image",
                )
            )
