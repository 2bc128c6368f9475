"""The docstrings' examples run and print what they say."""

import doctest
import importlib

import pytest

MODULES = ["agents", "behavior", "bounds", "data", "envs", "presets", "regret", "shaping"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"causal_pbrs.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
