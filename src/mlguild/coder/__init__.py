"""The Coder: turning raw model replies into runnable code, and naming every failure.

- ``extract_code`` takes the script out of a reply, or names why there is none
  (``truncated`` with the partial code, ``no_code``);
- ``continue_prompt`` / ``join_continuation`` complete a truncated script instead of
  re-deriving it;
- ``parse_edits`` / ``apply_edits`` apply SEARCH/REPLACE edits tolerantly, and
  ``diff_retry_prompt`` / ``should_fallback_to_rewrite`` drive the re-prompt policy;
- ``assemble_parts`` builds a script written step by step;
- ``failure_from_node`` turns a finished node into a short, specific ``Failure`` message.

Text processing only: no model calls and no files; the prompts it builds come from the
templates in ``mlguild/prompts`` (``mlguild.prompts``).
"""

from .continuation import MAX_CONTINUATIONS, continue_prompt, join_continuation
from .edits import (
    MAX_DIFF_REPROMPTS,
    Edit,
    EditFailure,
    EditResult,
    apply_edits,
    diff_retry_prompt,
    parse_edits,
    should_fallback_to_rewrite,
)
from .extract import Extraction, extract_code, is_length_stop, is_normal_stop
from .failures import MESSAGE_LIMIT, CoderFailure, Failure, failure_from_node, parse_last_traceback
from .stepwise import STEP_ORDER, assemble_parts

__all__ = [
    "MAX_CONTINUATIONS",
    "MAX_DIFF_REPROMPTS",
    "MESSAGE_LIMIT",
    "STEP_ORDER",
    "CoderFailure",
    "Edit",
    "EditFailure",
    "EditResult",
    "Extraction",
    "Failure",
    "apply_edits",
    "assemble_parts",
    "continue_prompt",
    "diff_retry_prompt",
    "extract_code",
    "failure_from_node",
    "is_length_stop",
    "is_normal_stop",
    "join_continuation",
    "parse_edits",
    "parse_last_traceback",
    "should_fallback_to_rewrite",
]
