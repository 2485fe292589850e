"""Can an EC2NodeClass launch this instance type at all?

Some settings of a class rule types out regardless of capacity: the network interfaces
it asks for (cards, device indexes, EFA-only interfaces the type lacks), AL2023 on ``a1``
(unsupported by that OS), nested virtualisation on processors without it, Nitro Enclaves
(``spec.enclaveOptions``) where ``NitroEnclavesSupport`` is not ``supported``, connection
tracking off Nitro. As in Karpenter, such a type stays in the list with every offering
unavailable, so a NodePool that names it explicitly is told why nothing launches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.apis.ec2nodeclass import EC2NodeClass

__all__ = ["compatible_with_nodeclass"]


def _network_interfaces_fit(record: Mapping[str, Any], nodeclass: EC2NodeClass) -> bool:
    wanted = nodeclass.spec.network_interfaces
    if not wanted:
        return True
    network = record.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or ()
    if not cards or network.get("EnaSupport") == "unsupported":
        return False
    for nic in wanted:
        if nic.network_card_index >= len(cards):
            return False
        index = nic.network_card_index
        card = next((c for c in cards if int(c.get("NetworkCardIndex", -1)) == index), None)
        if card is None or int(card.get("MaximumNetworkInterfaces") or 0) <= nic.device_index:
            return False
    efa_only = sum(1 for nic in wanted if nic.interface_type == "efa-only")
    if efa_only:
        limit = (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces")
        if limit is None or efa_only > int(limit):
            return False
    return True


def compatible_with_nodeclass(
    record: Mapping[str, Any], nodeclass: EC2NodeClass, family_name: str
) -> bool:
    if not _network_interfaces_fit(record, nodeclass):
        return False
    if family_name == "AL2023" and str(record.get("InstanceType", "")).startswith("a1."):
        return False
    cpu_options = nodeclass.spec.cpu_options
    if cpu_options is not None and cpu_options.nested_virtualization == "enabled":
        features = (record.get("ProcessorInfo") or {}).get("SupportedFeatures") or ()
        if "nested-virtualization" not in features:
            return False
    if nodeclass.spec.enclaves_enabled and record.get("NitroEnclavesSupport") != "supported":
        return False
    return nodeclass.spec.connection_tracking is None or record.get("Hypervisor") == "nitro"
