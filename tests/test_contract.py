"""One source of truth: every check verify runs on a learner's folder passes on the package itself.

The checks live in ``codeagent_lite.workbook.contract``. Here each one runs in-process
against the chapter's own modules, so the workbook can never grade a learner on a rule its
own reference breaks. ``test_verify.py`` runs the same checks through ``verify``.
"""

from __future__ import annotations

import importlib

import pytest

from codeagent_lite.workbook.contract import CHECKS, FILES, STEPS, Check, Inputs, Mismatch, Raised, checks_up_to


@pytest.mark.parametrize("check", CHECKS, ids=[f"{check.id} {check.name}" for check in CHECKS])
def test_the_reference_passes_every_check(check: Check) -> None:
    module = importlib.import_module(f"codeagent_lite.{check.file}")
    try:
        check.run(module)
    except Mismatch as mismatch:
        pytest.fail(f"the reference fails {check.id}: got {mismatch.got}")
    except Raised as raised:
        pytest.fail(f"the reference raises in {check.id}: {raised.error}")


def test_checks_come_in_step_order_with_unique_ids() -> None:
    steps = [check.step for check in CHECKS]
    assert steps == sorted(steps)
    assert set(steps) == set(STEPS)
    assert len({check.id for check in CHECKS}) == len(CHECKS)
    assert {check.file for check in CHECKS} == set(FILES)
    for check in CHECKS:
        assert check.id.startswith(f"{check.step}.")
        assert check.given and check.expected and check.name


def test_step_four_is_entirely_the_workbooks_own_rules_and_step_three_the_blogs() -> None:
    assert all(check.ours for check in CHECKS if check.step == 4)
    assert not any(check.ours for check in CHECKS if check.step == 3)


def test_checks_up_to_a_step_include_the_steps_before() -> None:
    assert {check.step for check in checks_up_to(2)} == {1, 2}
    assert checks_up_to(None) == CHECKS


def test_step_two_restores_the_helpers_it_lends() -> None:
    """Step 2 replaces build_provider_messages and parse_json_action by name while it runs."""
    from codeagent_lite import json_action_parser, json_text_adapter, json_text_messages

    before = (
        json_text_adapter.build_provider_messages,
        json_text_adapter.parse_json_action,
        json_text_messages.build_provider_messages,
        json_action_parser.parse_json_action,
    )
    for check in checks_up_to(2):
        if check.step == 2:
            check.run(json_text_adapter)
    after = (
        json_text_adapter.build_provider_messages,
        json_text_adapter.parse_json_action,
        json_text_messages.build_provider_messages,
        json_action_parser.parse_json_action,
    )
    assert after == before


@pytest.mark.parametrize("seed", [0, 1, 7, 2026, 123456789])
def test_the_reference_passes_every_check_on_inputs_drawn_from_a_seed(seed: int) -> None:
    """Graded judging draws fresh inputs; the expected values follow them, so the reference still passes."""
    inputs = Inputs.draw(seed)
    assert inputs != Inputs()
    for check in CHECKS:
        module = importlib.import_module(f"codeagent_lite.{check.file}")
        try:
            check.run(module, inputs)
        except (Mismatch, Raised) as failure:
            pytest.fail(f"seed {seed}: the reference fails {check.id}: {failure!r}")


def test_a_seed_changes_the_probes_of_the_checks_that_depend_on_their_inputs() -> None:
    public = {check.id: check.probe()[0] for check in CHECKS}
    seeded = {check.id: check.probe(Inputs.draw(5))[0] for check in CHECKS}
    changed = {check_id for check_id in public if public[check_id] != seeded[check_id]}
    assert {f"1.{n}" for n in range(1, 13)} <= changed
    assert {f"2.{n}" for n in range(1, 11)} <= changed
    assert {"3.1", "3.2", "3.3", "3.12", "3.15", "3.19"} <= changed
    assert Inputs.draw(5) == Inputs.draw(5)


def test_the_probes_carry_only_inputs_never_an_expected_value() -> None:
    """The child sees the probe but for its stand-ins' values: it must not hold what the judge compares with (a
    judge is a closure here), nor what the parent answers the adapter's calls with (it learns those by calling)."""
    from codeagent_lite.workbook.verify_standins import child_probe

    for check in CHECKS:
        probe, judge = check.probe()
        assert callable(judge)
        assert set(child_probe(probe)) <= {"kind", "history", "each", "text", "tools", "max_output_tokens"}, check.id
