"""Skip markers for tests that need a provider SDK (an optional extra of mlguild).

The suite must pass where an extra is not installed; ``scripts/test`` should install
``llm,anthropic,gemini`` so that these tests do run.
"""

from __future__ import annotations

import importlib.util

import pytest


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package (``google``) is absent
        return False


needs_openai = pytest.mark.skipif(not _installed("openai"), reason="needs pip install 'mlguild[llm]'")
needs_anthropic = pytest.mark.skipif(not _installed("anthropic"), reason="needs pip install 'mlguild[anthropic]'")
needs_gemini = pytest.mark.skipif(not _installed("google.genai"), reason="needs pip install 'mlguild[gemini]'")
