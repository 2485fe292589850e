"""The AWS set-up template (``deploy/aws/cloudformation.yaml``): cfn-lint clean, and its
controller policy allows exactly the AWS operations karpy's code calls, each scoped as
Karpenter scopes it (tag conditions on what karpy creates and deletes, ``iam:PassRole`` for
the node role only, reads pinned to the stack's region).

The operations are read from the source with `ast`, not listed by hand: a call on an AWS
client whose method is a botocore operation (``ec2.create_fleet(...)``), or an operation
name given as a string (``get_paginator("describe_instance_types")``, the paginated
helpers' ``"describe_subnets"``). So a new AWS call without a policy change, or a policy
action nothing calls any more, fails here.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore import xform_name

from karpy.cloud.aws.interruption import messages

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy" / "aws" / "cloudformation.yaml"
# What AWS authorizes besides the called operation itself.
IMPLIED = {
    "ec2:CreateFleet": {"ec2:RunInstances", "ec2:CreateTags", "iam:PassRole"},
    "ec2:CreateLaunchTemplate": {"ec2:CreateTags"},  # karpy passes TagSpecifications
    "iam:CreateInstanceProfile": {"iam:TagInstanceProfile"},  # karpy passes Tags
    "iam:AddRoleToInstanceProfile": {"iam:PassRole"},
}
CLUSTER = "demo"


def controller_code() -> list[Path]:
    return [p for p in (ROOT / "karpy").rglob("*.py")
            if "sandbox" not in p.relative_to(ROOT / "karpy").parts]  # fmt: skip


def services_karpy_uses() -> set[str]:
    """The AWS clients karpy makes: the names given to ``clients.client("ec2")``."""
    found = set()
    for path in controller_code():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "client" and node.args
                    and isinstance(node.args[0], ast.Constant)):  # fmt: skip
                found.add(str(node.args[0].value))
    return found


def operations_by_method() -> dict[str, set[str]]:
    """``create_fleet`` -> ``{"ec2:CreateFleet"}`` for every operation of karpy's clients (a
    few names, such as ``list_tags_for_resource``, belong to more than one)."""
    session = botocore.session.get_session()
    found: dict[str, set[str]] = {}
    for service in services_karpy_uses():
        model = session.get_service_model(service)
        prefix = model.signing_name  # the IAM action prefix (ec2, iam, pricing, ...)
        for operation in model.operation_names:
            found.setdefault(xform_name(operation), set()).add(f"{prefix}:{operation}")
    return found


def actions_karpy_calls() -> set[str]:
    by_method = operations_by_method()
    called: set[str] = set()
    for path in controller_code():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            names = [arg.value for arg in node.args if isinstance(arg, ast.Constant)]
            if isinstance(node.func, ast.Attribute):
                names.append(node.func.attr)
            for name in names:
                actions = by_method.get(name) if isinstance(name, str) else None
                if actions:
                    assert len(actions) == 1, f"{path}: {name!r} could be any of {actions}"
                    called |= actions
    for action in list(called):
        called |= IMPLIED.get(action, set())
    return called


def load_template() -> dict[str, Any]:
    # cfn-lint is imported where it is used: at module level it would cost every test
    # worker a third of a second while collecting.
    from cfnlint.decode import cfn_yaml

    return dict(cfn_yaml.loads(TEMPLATE.read_text(), str(TEMPLATE)))


# Actions granted only by a policy the stack makes on a parameter's say, and that parameter.
CONDITIONAL = {"ec2:RebootInstances": ("KarpyRebootPolicy", "RebootForRepair")}


def controller_policy(resource_name: str = "KarpyControllerPolicy") -> dict[str, Any]:
    """The policy document with ${...} substituted as CloudFormation would."""
    resource = load_template()["Resources"][resource_name]
    text = resource["Properties"]["PolicyDocument"]["Fn::Sub"]
    values = {"ClusterName": CLUSTER, "AWS::Partition": "aws", "AWS::Region": "us-west-2",
              "AWS::AccountId": "111122223333",
              "KarpyInterruptionQueue.Arn": "arn:aws:sqs:us-west-2:111122223333:karpy-demo",
              "KarpyNodeRole.Arn": "arn:aws:iam::111122223333:role/KarpyNodeRole-demo"}  # fmt: skip
    document = re.sub(r"\$\{([^}]+)\}", lambda m: values[m.group(1)], text)
    return dict(json.loads(document))


def every_statement() -> list[dict[str, Any]]:
    """The controller policy's statements and those of the policies made on a parameter."""
    statements = list(controller_policy()["Statement"])
    for resource_name, _ in CONDITIONAL.values():
        statements += controller_policy(resource_name)["Statement"]
    return statements


def statements_allowing(action: str) -> list[dict[str, Any]]:
    found = []
    for statement in every_statement():
        actions = statement["Action"]
        if action in ([actions] if isinstance(actions, str) else actions):
            found.append(statement)
    return found


def test_template_is_clean_under_cfn_lint():
    # every rule, warnings and informational ones included
    import cfnlint.api

    findings = cfnlint.api.lint_file(TEMPLATE, cfnlint.api.ManualArgs(include_checks=["I"]))
    assert [str(finding) for finding in findings] == []


def test_controller_policy_allows_exactly_the_operations_karpy_calls():
    allowed = {
        action
        for statement in every_statement()
        if statement["Effect"] == "Allow"
        for action in ([statement["Action"]] if isinstance(statement["Action"], str)
                       else statement["Action"])
    }  # fmt: skip
    called = actions_karpy_calls()
    assert called - allowed == set(), "karpy calls these, the policy does not allow them"
    assert allowed - called == set(), "the policy allows these, karpy never calls them"


def test_code_scan_finds_every_client_karpy_makes():
    assert services_karpy_uses() == {"ec2", "iam", "ssm", "sqs", "pricing", "eks"}


def test_code_scan_finds_the_calls_karpy_is_known_to_make():
    # guards the scanner itself: direct calls, paginator names and helper arguments
    called = actions_karpy_calls()
    assert {"ec2:CreateFleet", "ec2:DescribeInstanceTypes", "ec2:DescribeSubnets",
            "iam:ListInstanceProfiles", "sqs:ReceiveMessage", "pricing:GetProducts",
            "eks:DescribeCluster", "ssm:GetParameter"} <= called  # fmt: skip
    assert not any(action.startswith("ec2:CreateVpc") for action in called)  # sandbox only


def test_no_action_or_service_wildcards():
    for statement in every_statement():
        actions = statement["Action"]
        for action in [actions] if isinstance(actions, str) else actions:
            assert "*" not in action, statement["Sid"]
        assert statement["Effect"] == "Allow"


CLUSTER_OWNED = f"kubernetes.io/cluster/{CLUSTER}"


@pytest.mark.parametrize(
    "action", ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "ec2:RebootInstances"]
)
def test_deletions_need_the_cluster_ownership_tags_on_the_resource(action):
    (statement,) = statements_allowing(action)
    equals = statement["Condition"]["StringEquals"]
    assert equals[f"aws:ResourceTag/{CLUSTER_OWNED}"] == "owned"
    assert equals["aws:ResourceTag/eks:eks-cluster-name"] == CLUSTER
    assert statement["Condition"]["StringLike"] == {"aws:ResourceTag/karpenter.sh/nodepool": "*"}


@pytest.mark.parametrize("action", ["ec2:RunInstances", "ec2:CreateFleet",
                                    "ec2:CreateLaunchTemplate", "ec2:CreateTags"])  # fmt: skip
def test_what_karpy_creates_must_carry_the_cluster_tags(action):
    for statement in statements_allowing(action):
        resources = statement["Resource"]
        created = [r for r in ([resources] if isinstance(resources, str) else resources)
                   if re.search(r":(instance|volume|fleet|network-interface)/", r)]  # fmt: skip
        if not created and action != "ec2:CreateTags":
            continue  # existing images, subnets, security groups a launch only uses
        if statement["Sid"] == "AllowScopedResourceTagging":
            continue  # tagging karpy's instances after registration (the test below)
        equals = statement["Condition"]["StringEquals"]
        assert equals[f"aws:RequestTag/{CLUSTER_OWNED}"] == "owned", statement["Sid"]
        assert equals["aws:RequestTag/eks:eks-cluster-name"] == CLUSTER, statement["Sid"]
        if action == "ec2:CreateTags":  # tagging only as part of a create, never afterwards
            assert set(equals["ec2:CreateAction"]) == {"RunInstances", "CreateFleet",
                                                       "CreateLaunchTemplate"}  # fmt: skip


def test_tagging_after_launch_is_only_of_the_clusters_instances_and_of_three_keys():
    (statement,) = [s for s in statements_allowing("ec2:CreateTags")
                    if "ec2:CreateAction" not in s["Condition"]["StringEquals"]]  # fmt: skip
    assert statement["Sid"] == "AllowScopedResourceTagging"
    assert statement["Resource"] == "arn:aws:ec2:us-west-2:*:instance/*"
    condition = statement["Condition"]
    assert condition["StringEquals"] == {
        f"aws:ResourceTag/{CLUSTER_OWNED}": "owned",
        "aws:ResourceTag/eks:eks-cluster-name": CLUSTER,
    }
    assert condition["StringLike"] == {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    assert condition["StringEqualsIfExists"] == {"aws:RequestTag/eks:eks-cluster-name": CLUSTER}
    assert set(condition["ForAllValues:StringEquals"]["aws:TagKeys"]) == {
        "eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"}  # fmt: skip


def test_launches_on_an_existing_launch_template_need_karpys_tags_on_it():
    for action in ("ec2:RunInstances", "ec2:CreateFleet"):
        for statement in statements_allowing(action):
            resources = statement["Resource"]
            resources = [resources] if isinstance(resources, str) else resources
            if any(":launch-template/" in r for r in resources):
                assert "Condition" in statement, statement["Sid"]


def test_pass_role_names_only_the_node_role_and_only_for_ec2():
    (statement,) = statements_allowing("iam:PassRole")
    assert statement["Resource"] == "arn:aws:iam::111122223333:role/KarpyNodeRole-demo"
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}


@pytest.mark.parametrize("action", ["iam:CreateInstanceProfile", "iam:TagInstanceProfile",
                                    "iam:AddRoleToInstanceProfile",
                                    "iam:RemoveRoleFromInstanceProfile",
                                    "iam:DeleteInstanceProfile"])  # fmt: skip
def test_instance_profile_changes_are_conditioned_on_the_cluster_tag(action):
    (statement,) = statements_allowing(action)
    equals = statement["Condition"]["StringEquals"]
    assert (equals.get(f"aws:RequestTag/{CLUSTER_OWNED}") == "owned"
            or equals.get(f"aws:ResourceTag/{CLUSTER_OWNED}") == "owned")  # fmt: skip
    assert equals.get("aws:RequestTag/topology.kubernetes.io/region", equals.get(
        "aws:ResourceTag/topology.kubernetes.io/region")) == "us-west-2"  # fmt: skip


def test_regional_reads_are_pinned_to_the_stacks_region():
    (statement,) = statements_allowing("ec2:DescribeInstances")
    assert statement["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}


def test_queue_is_encrypted_short_lived_and_writable_by_eventbridge():
    resources = load_template()["Resources"]
    queue = resources["KarpyInterruptionQueue"]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == 300
    (statement,) = resources["KarpyInterruptionQueuePolicy"]["Properties"]["PolicyDocument"][
        "Statement"
    ]
    assert statement["Action"] == "sqs:SendMessage"
    assert set(statement["Principal"]["Service"]) == {"events.amazonaws.com", "sqs.amazonaws.com"}


def test_an_eventbridge_rule_feeds_the_queue_every_message_kind_karpy_reads():
    handled = {(messages.EC2, messages.SPOT_INTERRUPTION), (messages.EC2, messages.REBALANCE),
               (messages.EC2, messages.STATE_CHANGE),
               (messages.EC2, messages.RESERVATION_INTERRUPTION),
               (messages.HEALTH, messages.HEALTH_EVENT)}  # fmt: skip
    routed = set()
    for resource in load_template()["Resources"].values():
        if resource["Type"] != "AWS::Events::Rule":
            continue
        properties = resource["Properties"]
        (target,) = properties["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": ["KarpyInterruptionQueue", "Arn"]}
        pattern = properties["EventPattern"]
        routed |= {(s, d) for s in pattern["source"] for d in pattern["detail-type"]}
    assert routed == handled


def test_outputs_give_what_the_chart_and_node_classes_need():
    assert set(load_template()["Outputs"]) == {
        "NodeRoleArn", "NodeRoleName", "NodeInstanceProfileName", "ControllerPolicyArn",
        "InterruptionQueueName", "RebootPolicyArn",
    }  # fmt: skip


@pytest.mark.parametrize("action", CONDITIONAL)
def test_gated_actions_are_granted_only_when_their_parameter_says_so(action):
    """ec2:RebootInstances (gate RebootForRepair) is not in the controller policy; its own
    policy, and the output naming it, exist only when the stack's parameter is "true"."""
    resource_name, parameter = CONDITIONAL[action]
    template = load_template()
    assert action not in {a for st in controller_policy()["Statement"]
                          for a in ([st["Action"]] if isinstance(st["Action"], str)
                                    else st["Action"])}  # fmt: skip
    condition = template["Resources"][resource_name]["Condition"]
    assert template["Conditions"][condition] == {"Fn::Equals": [{"Ref": parameter}, "true"]}
    assert template["Parameters"][parameter]["Default"] == "false"
    outputs = [o for o in template["Outputs"].values()
               if o["Value"] == {"Ref": resource_name}]  # fmt: skip
    assert [o["Condition"] for o in outputs] == [condition]
