"""The words of verify's report (``verify``) and of the step titles, in English and Chinese.

A sibling of ``verify`` so that module keeps only its logic. What a check is given and
expects (``contract.Check.given``/``expected``) and what the learner's code returned stay as
the contract wrote them: they are Python values and the series' English phrases.
"""

from __future__ import annotations

from .contract import STEPS
from .language import Messages

__all__ = ["MESSAGES", "step_title"]

_STEP_TITLES_ZH = {
    1: "消息编码 · 二、消息转换（json_text_messages.py）",
    2: "Adapter 的调度流程 · 三、Adapter 调度（json_text_adapter.py）",
    3: "博客的四层检查 · 四、行动解析（json_action_parser.py）",
    4: "严格 JSON 与非空字符串：博客之外的规则（json_action_parser.py）",
}
"""Beside ``contract.STEPS`` (the English titles): a step added there without one here fails at import."""

MESSAGES = Messages(
    {
        # ------------------------------------------------------------------ the step titles
        **{f"step_{step}": {"en": title, "zh": _STEP_TITLES_ZH[step]} for step, title in STEPS.items()},
        # ------------------------------------------------------------------ one check's sentence
        "not_run": {"en": "not run: {reason}", "zh": "没有运行：{reason}"},
        "did_not_load": {"en": "{file}.py did not load", "zh": "{file}.py 没能加载"},
        "sentence": {
            "en": "given {given}, expected {expected}, got {got}.",
            "zh": "输入 {given}，期望 {expected}，实际得到 {got}。",
        },
        # ------------------------------------------------------------------ the report
        "heading": {"en": "verify {label}: steps {first}-{last}", "zh": "verify {label}：第 {first}-{last} 步"},
        "step": {"en": "step {step} · {title}", "zh": "第 {step} 步 · {title}"},
        "note": {"en": "note: {note}", "zh": "附注：{note}"},
        "ours": {"en": "[ours]", "zh": "[工作簿规则]"},
        "workbook_rule": {"en": "(a rule of this workbook: {rule})", "zh": "（本工作簿自己的规则：{rule}）"},
        "workbook_rule_html": {"en": "a rule of this workbook: {rule}", "zh": "本工作簿自己的规则：{rule}"},
        "checks_pass": {"en": "{passed} of {total} checks pass", "zh": "{total} 项检查通过了 {passed} 项"},
        "then": {"en": "; {summary}", "zh": "；{summary}"},
        "overview_line": {
            "en": "{mark} step {step} · {title}: {passed} of {total} checks pass",
            "zh": "{mark} 第 {step} 步 · {title}：{total} 项检查通过了 {passed} 项",
        },
        "every_check_passes": {"en": "every check passes", "zh": "每一项检查都通过了"},
        "start_with": {"en": "start with {id} ({file}.py)", "zh": "先看 {id}（{file}.py）"},
        # ------------------------------------------------------------------ yours beside ours
        "beside": {
            "en": "{label} beside the reference: step {step} · {title}",
            "zh": "{label} 与参考实现对照：第 {step} 步 · {title}",
        },
        "row_ours": {"en": "    ours : {text}", "zh": "    参考：{text}"},
        "row_yours": {"en": "    yours: {text}", "zh": "    你的：{text}"},
        "row_cost": {"en": "    cost : {text}", "zh": "    代价：{text}"},
        "differ": {"en": "{differ} of {total} differ", "zh": "{total} 个里有 {differ} 个不同"},
        "all_same": {"en": "all {total} the same", "zh": "全部 {total} 个都相同"},
        "column_reply": {"en": "reply", "zh": "回复"},
        "column_ours": {"en": "ours (reference)", "zh": "参考实现（ours）"},
        "column_yours": {"en": "yours", "zh": "你的（yours）"},
        "column_cost": {"en": "what the difference costs", "zh": "这个差异的代价"},
        "same": {"en": "same", "zh": "相同"},
        "beside_html": {"en": "{label} beside the reference", "zh": "{label} 与参考实现对照"},
    }
)


def step_title(step: int) -> str:
    """Step ``step``'s title in the edition's language (``contract.STEPS`` holds the English ones)."""
    return MESSAGES.say(f"step_{step}")
