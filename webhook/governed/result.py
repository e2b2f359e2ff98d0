"""The verdict on one object: the shape the webhook, the CLI and the tests all read."""

from __future__ import annotations

import enum
import typing as t

from webhook.vocab.field import FieldError

if t.TYPE_CHECKING:
    from webhook.policy.model import Enforcement

__all__ = ["Result", "Status"]


class Status(enum.Enum):
    VALID = "valid"
    INVALID = "invalid"
    SKIPPED = "skipped"  # no policy governs the kind: neither valid nor invalid
    ERROR = "error"  # the input is not an object that can be judged


class Result(t.NamedTuple):
    """``errors`` holds every field error; ``warnings`` advice that does not block.

    ``governed_by`` names the policy (or built-in validator) that judged the object; ``None``
    when the object was skipped. ``reason`` explains a skip or an error status.
    ``ungoverned``: skipped because nothing loaded judges that apiVersion and kind (not
    because a policy defers the object to its controller), which ``wasp validate`` reports.
    ``enforcement`` is what an invalid object gets: the judging policy's ``spec.enforcement``
    (``deny`` for the scheduling API's own objects and ``--reject``). Immutable; a
    NamedTuple, so results compare and unpack like the tuples they are.
    """

    status: Status
    errors: tuple[FieldError, ...] = ()
    warnings: tuple[str, ...] = ()
    governed_by: str | None = None
    reason: str = ""
    enforcement: Enforcement = "deny"
    ungoverned: bool = False

    @classmethod
    def judged(
        cls,
        governed_by: str,
        errors: list[FieldError],
        warnings: list[str],
        enforcement: Enforcement = "deny",
    ) -> Result:
        status = Status.INVALID if errors else Status.VALID
        return cls(status, tuple(errors), tuple(dict.fromkeys(warnings)), governed_by, "", enforcement)

    @classmethod
    def skipped(cls, reason: str, *, ungoverned: bool = False) -> Result:
        return cls(Status.SKIPPED, reason=reason, ungoverned=ungoverned)

    @property
    def allowed(self) -> bool:
        """No field errors. A warned object has them: the webhook admits it anyway, and it is
        compiled (its pods are stamped), as a Job gets its objects from the Job controller."""
        return self.status is not Status.INVALID

    @property
    def warned(self) -> bool:
        """Invalid under a policy in warn mode: admitted, with the errors as warnings."""
        return self.status is Status.INVALID and self.enforcement == "warn"
