"""A launch is idempotent at EC2 itself: CreateFleet carries a client token of the
NodeClaim's UID and attempt, so a launch whose answer was lost and is retried while the tag
lookup does not yet see the instance gets the first instance back instead of a second.

The faults are injected at the botocore level with event hooks on the client the launcher
uses: ``after-call`` of CreateFleet raises a connection error once EC2 (moto) has launched
(the answer is lost), and ``after-call`` of DescribeInstances empties the answer while
``stale`` is set (the eventually consistent tag lookup has not caught up)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import pytest
from botocore.exceptions import ConnectionClosedError

from karpy.cloud.aws.launch import InstanceLauncher
from karpy.cloud.aws.launch.attempts import MISMATCH_WAIT, client_token
from karpy.cloud.errors import CreateError, InsufficientCapacity
from karpy.cloud.unavailable import DEFAULT_TTL, UnavailableOfferings
from tests.aws.launch.conftest import cluster_info, nodeclaim, nodeclass
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.faults import EC2Faults
    from karpy.sandbox.aws.seed import Account

ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
UID = "5f0c2a9e-8d1b-4c3e-9a7f-2b6d4e8c1a03"


def claim_1() -> NodeClaim:
    claim = nodeclaim("claim-1", requirements=ON_DEMAND)
    return attrs.evolve(claim, metadata=attrs.evolve(claim.metadata, uid=UID))


class Faults:
    """Botocore event hooks: lose the next CreateFleet answers, hide instances."""

    def __init__(self) -> None:
        self.lose_fleets = 0
        self.stale = False
        self.tokens: list[str] = []

    def before_fleet(self, params: dict[str, Any], **_: Any) -> None:
        self.tokens.append(str(params.get("ClientToken")))

    def after_fleet(self, **_: Any) -> None:
        if self.lose_fleets:
            self.lose_fleets -= 1
            raise ConnectionClosedError(endpoint_url="http://ec2.lost.answer")

    def after_describe(self, parsed: dict[str, Any], **_: Any) -> None:
        if self.stale:
            parsed["Reservations"] = []


@pytest.fixture
async def faults(aws_clients: AWSClients) -> Faults:
    hooks = Faults()
    events = (await aws_clients.ec2()).meta.events
    events.register("provide-client-params.ec2.CreateFleet", hooks.before_fleet)
    events.register("after-call.ec2.CreateFleet", hooks.after_fleet)
    events.register("after-call.ec2.DescribeInstances", hooks.after_describe)
    return hooks


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def new_launcher(
    account: Account, clients: AWSClients, clock: FakeClock, unavailable: UnavailableOfferings
) -> InstanceLauncher:
    return InstanceLauncher(clients, cluster_info(account), unavailable=unavailable, clock=clock)


async def instances_of(clients: AWSClients, claim: str) -> list[str]:
    ec2 = await clients.ec2()
    found = await ec2.describe_instances(
        Filters=[{"Name": "tag:karpenter.sh/nodeclaim", "Values": [claim]}]
    )
    return [i["InstanceId"] for r in found["Reservations"] for i in r["Instances"]]


async def test_a_launch_whose_answer_was_lost_and_is_retried_starts_one_instance(
    aws_account: Account, aws_clients: AWSClients, faults: Faults, priced: Any, clock: FakeClock
) -> None:
    launcher = new_launcher(aws_account, aws_clients, clock, UnavailableOfferings(clock=clock))
    claim = claim_1()
    types = [priced("m5.large"), priced("m5.xlarge")]
    faults.lose_fleets, faults.stale = 1, True
    with pytest.raises(ConnectionClosedError):
        await launcher.create(claim, nodeclass(aws_account), types)

    instance = await launcher.create(claim, nodeclass(aws_account), types)

    faults.stale = False
    launched = await instances_of(aws_clients, "claim-1")
    assert len(launched) == 1
    assert instance.provider_id.endswith(f"/{launched[0]}")
    assert faults.tokens == [client_token(UID, 0)] * 2


async def test_a_restarted_controller_retrying_a_lost_launch_gets_the_first_instance(
    aws_account: Account, aws_clients: AWSClients, faults: Faults, priced: Any, clock: FakeClock
) -> None:
    claim = claim_1()
    types = [priced("m5.large")]
    faults.lose_fleets, faults.stale = 1, True
    with pytest.raises(ConnectionClosedError):
        await new_launcher(aws_account, aws_clients, clock, UnavailableOfferings()).create(
            claim, nodeclass(aws_account), types
        )

    restarted = new_launcher(aws_account, aws_clients, clock, UnavailableOfferings())
    instance = await restarted.create(claim, nodeclass(aws_account), types)

    faults.stale = False
    assert [instance.provider_id.rsplit("/", 1)[1]] == await instances_of(aws_clients, "claim-1")


async def test_a_changed_request_under_a_remembered_token_waits_for_the_tag_lookup(
    aws_account: Account, aws_clients: AWSClients, faults: Faults, priced: Any, clock: FakeClock
) -> None:
    claim = claim_1()
    faults.lose_fleets, faults.stale = 1, True
    with pytest.raises(ConnectionClosedError):
        await new_launcher(aws_account, aws_clients, clock, UnavailableOfferings()).create(
            claim, nodeclass(aws_account), [priced("m5.large")]
        )
    restarted = new_launcher(aws_account, aws_clients, clock, UnavailableOfferings())
    # the restarted controller sees other types: same token, other parameters
    changed = [priced("m5.large"), priced("c5.large")]
    for _ in range(2):
        with pytest.raises(CreateError) as raised:
            await restarted.create(claim, nodeclass(aws_account), changed)
        assert raised.value.reason == "IdempotentParameterMismatch"
        await clock.advance(MISMATCH_WAIT.total_seconds() / 2 - 1)
    faults.stale = False  # by now the tag lookup sees the first launch
    assert len(await instances_of(aws_clients, "claim-1")) == 1
    await clock.advance(2)
    instance = await restarted.create(claim, nodeclass(aws_account), changed)
    assert [instance.provider_id.rsplit("/", 1)[1]] == await instances_of(aws_clients, "claim-1")
    assert set(faults.tokens) == {client_token(UID, 0)}


async def test_after_a_launch_that_definitely_failed_the_next_one_is_a_new_request(
    aws_account: Account, aws_clients: AWSClients, faults: Faults, ec2_faults: EC2Faults,
    priced: Any,
) -> None:  # fmt: skip
    clock = FakeClock()
    launcher = new_launcher(aws_account, aws_clients, clock, UnavailableOfferings(clock=clock))
    claim = claim_1()
    types = [priced("m5.large")]
    ec2_faults.ice([("m5.large", "*", "on-demand")])
    with pytest.raises(InsufficientCapacity):
        await launcher.create(claim, nodeclass(aws_account), types)

    ec2_faults.clear()
    await clock.advance(DEFAULT_TTL + 1)  # the offerings are launchable again
    instance = await launcher.create(claim, nodeclass(aws_account), types)

    assert instance.instance_type == "m5.large"
    assert faults.tokens == [client_token(UID, 0), client_token(UID, 1)]
    assert len(await instances_of(aws_clients, "claim-1")) == 1


def test_tokens_fit_ec2s_64_ascii_characters() -> None:
    assert client_token(UID, 3) == f"karpy-{UID}-3"
    long = client_token("x" * 80, 12)
    assert len(long) <= 64 and long.isascii() and long.endswith("-12")
    assert long == client_token("x" * 80, 12) != client_token("y" * 80, 12)
