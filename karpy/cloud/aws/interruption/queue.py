"""`InterruptionQueue`: the three SQS calls the interruption reader makes.

``INTERRUPTION_QUEUE`` is a queue *name* (Karpenter's CloudFormation names it after the
cluster); its URL is looked up with GetQueueUrl on first use and kept. Messages are read
with ReceiveMessage as Karpenter reads them: up to 10 at a time, long-polling up to 20
seconds, each hidden from other readers for 20 seconds, so a message whose handling
failed comes back by itself. A queue that does not exist (not created yet, or deleted
under us) raises `QueueNotFound` and forgets the URL, so the next call looks it up again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import attrs
from botocore.exceptions import ClientError

from karpy.errors import KarpyError

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients

__all__ = ["InterruptionQueue", "QueueNotFound", "ReceivedMessage"]

MAX_MESSAGES: Final = 10
VISIBILITY_TIMEOUT: Final = 20  # seconds
WAIT_SECONDS: Final = 20  # the longest long poll SQS allows
_MISSING_QUEUE_CODES: Final = frozenset(
    {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}
)


class QueueNotFound(KarpyError):
    """The interruption queue does not exist (or this identity may not see it)."""


@attrs.frozen(slots=True)
class ReceivedMessage:
    """One received message: the interruption reader's reconcile key."""

    message_id: str
    receipt_handle: str
    body: str
    sent: datetime | None = None  # SQS's SentTimestamp

    def __str__(self) -> str:
        return self.message_id


class InterruptionQueue:
    def __init__(self, clients: AWSClients, name: str) -> None:
        self.clients = clients
        self.name = name
        self.url: str | None = None

    async def resolve(self) -> str:
        """The queue's URL (GetQueueUrl, once); `QueueNotFound` when there is none."""
        if self.url is None:
            sqs = await self.clients.sqs()
            try:
                answer = await sqs.get_queue_url(QueueName=self.name)
            except ClientError as exc:
                raise self._not_found(exc) or exc from None
            self.url = str(answer["QueueUrl"])
        return self.url

    async def receive(self, wait_seconds: int = WAIT_SECONDS) -> list[ReceivedMessage]:
        """The next messages, waiting up to ``wait_seconds`` for one to arrive."""
        url = await self.resolve()
        sqs = await self.clients.sqs()
        try:
            answer = await sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=MAX_MESSAGES,
                VisibilityTimeout=VISIBILITY_TIMEOUT,
                WaitTimeSeconds=wait_seconds,
                MessageSystemAttributeNames=["SentTimestamp"],
            )
        except ClientError as exc:
            raise self._not_found(exc) or exc from None
        return [_received(raw) for raw in answer.get("Messages") or ()]

    async def delete(self, message: ReceivedMessage) -> None:
        sqs = await self.clients.sqs()
        try:
            await sqs.delete_message(QueueUrl=await self.resolve(),
                                     ReceiptHandle=message.receipt_handle)  # fmt: skip
        except ClientError as exc:
            raise self._not_found(exc) or exc from None

    def _not_found(self, exc: ClientError) -> QueueNotFound | None:
        error = exc.response.get("Error") or {}
        codes = {error.get("Code"), error.get("QueryErrorCode")}
        if codes.isdisjoint(_MISSING_QUEUE_CODES):
            return None
        self.url = None
        return QueueNotFound(f"interruption queue not found: SQS queue {self.name!r} does not "
                             "exist (create it, or unset INTERRUPTION_QUEUE)")  # fmt: skip


def _received(raw: dict[str, Any]) -> ReceivedMessage:
    sent = str((raw.get("Attributes") or {}).get("SentTimestamp") or "")
    return ReceivedMessage(
        message_id=str(raw.get("MessageId", "")),
        receipt_handle=str(raw.get("ReceiptHandle", "")),
        body=str(raw.get("Body") or ""),
        sent=datetime.fromtimestamp(int(sent) / 1000, UTC) if sent.isdigit() else None,
    )
