"""The moto server's WSGI wrapper: the catalogue calls are answered from memory once
moto has answered them, per region and request, and never when moto failed; with a
directory, from the answers another process's server kept there."""

from __future__ import annotations

import io
import threading
import time
from typing import TYPE_CHECKING, Any

from karpy.sandbox.aws.faults import EC2Faults
from karpy.sandbox.aws.server import CatalogCache, ThrottlingApp

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.server import MotoServer

FORM = "application/x-www-form-urlencoded; charset=utf-8"


class Backend:
    """A WSGI app that counts its calls and answers with ``status`` and a numbered body."""

    def __init__(self, status: str = "200 OK") -> None:
        self.status = status
        self.calls = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        self.calls += 1
        start_response(self.status, [("Content-Type", "text/xml")])
        return [b"answer ", str(self.calls).encode()]


def call(app: ThrottlingApp, body: str, region: str = "us-west-2") -> tuple[str, bytes]:
    data = body.encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/",
        "CONTENT_TYPE": FORM,
        "CONTENT_LENGTH": str(len(data)),
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential=testing/20261127/{region}/ec2/"
        "aws4_request, SignedHeaders=host, Signature=0",
        "wsgi.input": io.BytesIO(data),
    }
    statuses: list[str] = []
    chunks = app(environ, lambda status, headers, *exc: statuses.append(status))
    return statuses[0], b"".join(chunks)


DESCRIBE = "Action=DescribeInstanceTypes&Version=2016-11-15"


def test_a_catalogue_call_is_answered_by_moto_once_per_region_and_request() -> None:
    backend = Backend()
    app = ThrottlingApp(backend, EC2Faults())
    assert call(app, DESCRIBE) == ("200 OK", b"answer 1")
    assert call(app, DESCRIBE) == ("200 OK", b"answer 1")
    assert call(app, DESCRIBE, region="eu-west-1") == ("200 OK", b"answer 2")
    assert call(app, DESCRIBE + "&MaxResults=100") == ("200 OK", b"answer 3")
    offerings = "Action=DescribeInstanceTypeOfferings&LocationType=availability-zone"
    assert call(app, offerings) == ("200 OK", b"answer 4")
    assert call(app, offerings) == ("200 OK", b"answer 4")
    assert backend.calls == 4


def test_other_calls_and_failed_answers_always_reach_moto() -> None:
    backend = Backend()
    app = ThrottlingApp(backend, EC2Faults())
    call(app, "Action=DescribeInstances")
    call(app, "Action=DescribeInstances")
    assert backend.calls == 2
    failing = Backend("500 Internal Server Error")
    app = ThrottlingApp(failing, EC2Faults())
    call(app, DESCRIBE)
    call(app, DESCRIBE)
    assert failing.calls == 2


def test_a_catalogue_answer_kept_in_a_directory_is_replayed_by_another_server(
    tmp_path: Path,
) -> None:
    first = Backend()
    kept = ThrottlingApp(first, EC2Faults(), CatalogCache(tmp_path))
    assert call(kept, DESCRIBE) == ("200 OK", b"answer 1")
    later = Backend()
    later.calls = 40  # its own answers would read "answer 41", "answer 42"...
    replayed = ThrottlingApp(later, EC2Faults(), CatalogCache(tmp_path))
    assert call(replayed, DESCRIBE) == ("200 OK", b"answer 1")
    assert later.calls == 40
    assert call(replayed, DESCRIBE, region="eu-west-1") == ("200 OK", b"answer 41")
    alone = Backend()
    alone.calls = 90  # a server given no directory asks its own moto
    assert call(ThrottlingApp(alone, EC2Faults()), DESCRIBE) == ("200 OK", b"answer 91")


def test_a_failed_answer_is_not_kept_and_an_unreadable_file_is_a_miss(tmp_path: Path) -> None:
    failing = Backend("500 Internal Server Error")
    call(ThrottlingApp(failing, EC2Faults(), CatalogCache(tmp_path)), DESCRIBE)
    assert list(tmp_path.iterdir()) == []
    call(ThrottlingApp(Backend(), EC2Faults(), CatalogCache(tmp_path)), DESCRIBE)
    (kept,) = tmp_path.iterdir()
    kept.write_text("{not json")
    again = Backend()
    again.calls = 7
    assert call(ThrottlingApp(again, EC2Faults(), CatalogCache(tmp_path)), DESCRIBE) == (
        "200 OK", b"answer 8")  # fmt: skip


def test_a_throttled_catalogue_call_is_throttled_even_when_its_answer_is_known() -> None:
    backend = Backend()
    faults = EC2Faults()
    app = ThrottlingApp(backend, faults)
    call(app, DESCRIBE)
    faults.throttle("DescribeInstanceTypes", 1)
    status, body = call(app, DESCRIBE)
    assert status.startswith("503") and b"RequestLimitExceeded" in body
    assert call(app, DESCRIBE) == ("200 OK", b"answer 1")


async def test_moto_gives_the_same_catalogue_twice_over_http(
    moto_server: MotoServer, aws_clients: AWSClients
) -> None:
    ec2 = await aws_clients.ec2()
    first = await ec2.describe_instance_types(InstanceTypes=["m5.large", "m6g.large"])
    again = await ec2.describe_instance_types(InstanceTypes=["m5.large", "m6g.large"])
    other = await ec2.describe_instance_types(InstanceTypes=["c5.xlarge"])
    names = [t["InstanceType"] for t in first["InstanceTypes"]]
    assert sorted(names) == ["m5.large", "m6g.large"]
    assert again["InstanceTypes"] == first["InstanceTypes"]
    assert [t["InstanceType"] for t in other["InstanceTypes"]] == ["c5.xlarge"]


class Overlap:
    """A WSGI app that takes a while and notes how many calls ran at once."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.05)
        with self.lock:
            self.running -= 1
        start_response("200 OK", [("Content-Type", "text/xml")])
        return [b"ok"]


def concurrently(app: ThrottlingApp, body: str, times: int = 6) -> None:
    threads = [threading.Thread(target=call, args=(app, body)) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)


def test_ec2_writes_run_one_at_a_time_and_reads_side_by_side() -> None:
    """moto checks a launch template's name, then creates it, without a lock: two
    concurrent creates of one name both succeeded under load; EC2 refuses the second."""
    writes = Overlap()
    create = "Action=CreateLaunchTemplate&LaunchTemplateName=karpenter.k8s.aws%2F1"
    concurrently(ThrottlingApp(writes, EC2Faults()), create)
    assert writes.most == 1
    reads = Overlap()
    concurrently(ThrottlingApp(reads, EC2Faults()), "Action=DescribeLaunchTemplates")
    assert reads.most > 1
