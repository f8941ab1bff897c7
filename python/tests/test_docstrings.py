"""Every public callable of `tally`, `tally.plan` and `tally.spark` has a numpydoc docstring
(summary, Parameters, Returns, Raises, Examples) whose parameters are its own, and the examples
run (those of `tally.spark` in test_spark.py, on its session)."""

from __future__ import annotations

import doctest
import inspect
import pydoc
from typing import Any

import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc

import tally
import tally._budget
import tally._release
import tally.plan
import tally.spark

MODULES = [tally, tally.plan, tally.spark]


def public(module: Any) -> list[tuple[str, Any]]:
    return [(f"{module.__name__}.{name}", getattr(module, name)) for name in module.__all__]


FUNCTIONS = [
    (name, value)
    for module in MODULES
    for name, value in public(module)
    if inspect.isfunction(value)
]
CLASSES = [
    (name, value) for module in MODULES for name, value in public(module) if inspect.isclass(value)
]
METHODS = [
    (f"{class_name}.{name}", member)
    for class_name, cls in CLASSES
    for name, member in vars(cls).items()
    if not name.startswith("_") and inspect.isfunction(member)
]


def documented_names(doc: Any, section: str) -> set[str]:
    """The names a section lists (`min, max` lists two)."""
    return {name.strip() for entry in doc[section] for name in entry.name.split(",")}


@pytest.mark.parametrize(("name", "function"), FUNCTIONS, ids=[name for name, _ in FUNCTIONS])
def test_every_public_function_has_numpydoc_sections(name: str, function: Any) -> None:
    doc = FunctionDoc(function)
    assert doc["Summary"], name
    for section in ("Parameters", "Returns", "Raises", "Examples"):
        assert doc[section], f"{name} has no {section} section"
    assert documented_names(doc, "Parameters") == set(inspect.signature(function).parameters)


@pytest.mark.parametrize(("name", "cls"), CLASSES, ids=[name for name, _ in CLASSES])
def test_every_public_class_documents_its_attributes(name: str, cls: Any) -> None:
    doc = ClassDoc(cls, config={"show_class_members": False})
    assert doc["Summary"] and doc["Examples"], name
    fields = {name for name in getattr(cls, "__dataclass_fields__", {}) if not name.startswith("_")}
    properties = {key for key, value in vars(cls).items() if isinstance(value, property)}
    documented = documented_names(doc, "Attributes")
    if fields:
        assert documented == fields | properties, name
    else:
        # Attributes set by the constructor are documented beside the properties.
        assert documented >= properties, name


@pytest.mark.parametrize(("name", "method"), METHODS, ids=[name for name, _ in METHODS])
def test_every_public_method_has_returns_and_examples(name: str, method: Any) -> None:
    doc = FunctionDoc(method)
    assert doc["Summary"] and doc["Returns"] and doc["Examples"], name


def test_help_lists_the_parameters() -> None:
    shown = pydoc.render_doc(tally.histogram, renderer=pydoc.plaintext)
    for keyword in ("epsilon : float", "delta : float", "sampling_key : str", "Raises", "Examples"):
        assert keyword in shown


@pytest.mark.parametrize(
    "module", [tally, tally._budget, tally._release, tally.plan], ids=lambda m: m.__name__
)
def test_the_examples_run(module: Any) -> None:
    failed, attempted = doctest.testmod(module, raise_on_error=False, report=True)
    assert attempted > 0 and failed == 0, (failed, attempted)
