"""The IAM instance profile of an EC2NodeClass's nodes.

A class names either an ``instanceProfile`` the user manages (karpy only checks that it
exists) or a ``role``, for which karpy manages a profile, as Karpenter does:

* **Name and path.** ``<cluster>_<n>`` where ``n`` is the Go hash of region, class name
  and a random UUID, created under the path ``/karpenter/<region>/<cluster>/<class uid>/``
  and tagged with the class's tags plus ``kubernetes.io/cluster/<cluster>=owned``,
  ``eks:eks-cluster-name``, ``karpenter.k8s.aws/ec2nodeclass`` and
  ``topology.kubernetes.io/region``. The random part means a role change gets a new
  profile while running instances keep the old one; the path is how every profile of a
  class is found again, after a restart or when the class is deleted.
* **Reuse.** The profile in ``status.instanceProfile`` is kept while it exists and holds
  the role. Otherwise a profile under the class's path that holds the role is adopted
  (a profile created just before a crash, or before a status write was lost), and only
  then is one created — so restarts and conflicts never create profiles in a loop. A
  role that does not exist fails the creation; the half-made profile is deleted, and the
  role is not tried again for a minute.
* **Deletion** (finalizer): every profile under the class's path, and the name older
  Karpenter versions used (``<cluster>_<hash(region + name)>``): each loses its role,
  then is deleted.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from karpy.apis.gohash import go_hash
from karpy.apis.labels import LABEL_AWS_NODECLASS, LABEL_REGION
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.nodeclass.conditions import Unresolved
from karpy.cloud.aws.nodeclass.selectors import describe_all
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients

__all__ = [
    "InstanceProfileError",
    "InstanceProfiles",
    "legacy_profile_name",
    "profile_name",
    "profile_path",
    "profile_tags",
]

log = get_logger("aws.nodeclass.instanceprofile")

ROLE_RETRY: Final = 60.0  # seconds before a missing role is tried again
RECREATION_MEMORY: Final = 60.0  # seconds a created profile is remembered without status


class InstanceProfileError(Unresolved):
    """The profile cannot be ensured (InstanceProfileReady's reason and message)."""


def profile_name(cluster: str, region: str, nodeclass: str, salt: str) -> str:
    return f"{cluster}_{go_hash(f'{region}{nodeclass}{salt}')}"


def legacy_profile_name(cluster: str, region: str, nodeclass: str) -> str:
    return f"{cluster}_{go_hash(f'{region}{nodeclass}')}"


def profile_path(region: str, cluster: str, uid: str) -> str:
    return f"/karpenter/{region}/{cluster}/{uid}/"


def profile_tags(nodeclass: EC2NodeClass, cluster: str, region: str) -> dict[str, str]:
    return {
        **nodeclass.spec.tags,
        f"kubernetes.io/cluster/{cluster}": "owned",
        "eks:eks-cluster-name": cluster,
        LABEL_AWS_NODECLASS: nodeclass.name,
        LABEL_REGION: region,
    }


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _roles(profile: dict[str, Any]) -> list[str]:
    return [str(r.get("RoleName")) for r in profile.get("Roles") or ()]


class InstanceProfiles:
    """Ensures, checks and deletes instance profiles (see the module docstring)."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        cluster_name: str,
        region: str,
        clock: Clock = SYSTEM_CLOCK,
        salt: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.clients = clients
        self.cluster_name = cluster_name
        self.region = region
        self.clock = clock
        self.salt = salt
        self._missing_roles: dict[str, float] = {}  # role -> monotonic time to retry
        self._created: dict[tuple[str, str], tuple[float, str]] = {}  # (uid, role) -> profile

    def path_of(self, nodeclass: EC2NodeClass) -> str:
        return profile_path(self.region, self.cluster_name, nodeclass.metadata.uid)

    async def get(self, name: str) -> dict[str, Any] | None:
        """The profile, or None when it does not exist."""
        iam: Any = await self.clients.iam()
        try:
            answer = await iam.get_instance_profile(InstanceProfileName=name)
        except ClientError as exc:
            if _code(exc) == "NoSuchEntity":
                return None
            raise
        profile: dict[str, Any] = answer["InstanceProfile"]
        return profile

    async def check(self, name: str) -> None:
        """`InstanceProfileError` unless the user's profile ``name`` exists."""
        if await self.get(name) is None:
            raise InstanceProfileError(
                "InstanceProfileNotFound", f'instance profile "{name}" does not exist'
            )

    async def ensure(self, nodeclass: EC2NodeClass) -> str:
        """The name of a managed profile holding ``spec.role``, created if need be."""
        role = str(nodeclass.spec.role)
        now = self.clock.monotonic()
        key = (nodeclass.metadata.uid, role)
        remembered = self._created.get(key)
        candidates = [nodeclass.status.instance_profile]
        if remembered is not None and remembered[0] > now:
            candidates.insert(0, remembered[1])
        for name in filter(None, candidates):
            profile = await self.get(name)
            if profile is not None and _roles(profile)[:1] == [role.rsplit("/", 1)[-1]]:
                return name
        adopted = await self._adopt(nodeclass, role)
        if adopted is not None:
            return adopted
        retry_at = self._missing_roles.get(role)
        if retry_at is not None and retry_at > now:
            raise _role_not_found(role)
        name = profile_name(self.cluster_name, self.region, nodeclass.name, self.salt())
        await self._create(nodeclass, name, role)
        self._created[key] = (now + RECREATION_MEMORY, name)
        log.info("created instance profile", instanceProfile=name, role=role,
                 EC2NodeClass={"name": nodeclass.name})  # fmt: skip
        return name

    async def _adopt(self, nodeclass: EC2NodeClass, role: str) -> str | None:
        short = role.rsplit("/", 1)[-1]
        for profile in await self.list_managed(nodeclass):
            if _roles(profile)[:1] == [short]:
                return str(profile["InstanceProfileName"])
        return None

    async def _create(self, nodeclass: EC2NodeClass, name: str, role: str) -> None:
        iam: Any = await self.clients.iam()
        tags = profile_tags(nodeclass, self.cluster_name, self.region)
        await iam.create_instance_profile(
            InstanceProfileName=name,
            Path=self.path_of(nodeclass),
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )
        try:
            # AddRoleToInstanceProfile takes the role's name without its path.
            await iam.add_role_to_instance_profile(
                InstanceProfileName=name, RoleName=role.rsplit("/", 1)[-1]
            )
        except ClientError as exc:
            await self.delete(name)  # never leave a profile without its role behind
            if _code(exc) == "NoSuchEntity":
                self._missing_roles[role] = self.clock.monotonic() + ROLE_RETRY
                raise _role_not_found(role) from exc
            raise
        self._missing_roles.pop(role, None)

    async def list_managed(self, nodeclass: EC2NodeClass) -> list[dict[str, Any]]:
        """The profiles under the class's path."""
        iam: Any = await self.clients.iam()
        path = self.path_of(nodeclass)
        found = await describe_all(
            iam, "list_instance_profiles", "InstanceProfiles", PathPrefix=path
        )
        return [p for p in found if p.get("Path") == path]  # moto ignores PathPrefix

    async def delete(self, name: str) -> bool:
        """Remove the profile's role, then the profile; whether it existed."""
        profile = await self.get(name)
        if profile is None:
            return False
        iam: Any = await self.clients.iam()
        for role in _roles(profile):
            try:
                await iam.remove_role_from_instance_profile(InstanceProfileName=name,
                                                            RoleName=role)  # fmt: skip
            except ClientError as exc:
                if _code(exc) != "NoSuchEntity":
                    raise
        try:
            await iam.delete_instance_profile(InstanceProfileName=name)
        except ClientError as exc:
            if _code(exc) != "NoSuchEntity":
                raise
            return False
        return True

    async def delete_managed(self, nodeclass: EC2NodeClass) -> list[str]:
        """Delete every profile karpy (or Karpenter) made for the class; their names."""
        names = [str(p["InstanceProfileName"]) for p in await self.list_managed(nodeclass)]
        legacy = legacy_profile_name(self.cluster_name, self.region, nodeclass.name)
        if legacy not in names and legacy != nodeclass.spec.instance_profile:
            names.append(legacy)
        deleted = [name for name in names if await self.delete(name)]
        self._created = {k: v for k, v in self._created.items() if k[0] != nodeclass.metadata.uid}
        for name in deleted:
            log.info("deleted instance profile", instanceProfile=name,
                     EC2NodeClass={"name": nodeclass.name})  # fmt: skip
        return deleted


def _role_not_found(role: str) -> InstanceProfileError:
    return InstanceProfileError("RoleNotFound", f'role "{role}" does not exist')
