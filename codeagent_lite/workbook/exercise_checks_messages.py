"""The words of the exercise book's self-checks (``exercise_checks``), in English and Chinese.

Kept beside the checks rather than inside them so a reviewer reads each line in both
languages side by side, and the checks themselves stay short. Identifiers, the parser's
own phrases ('model output must be an object') and Python values are not translated:
the learner types them exactly as shown.
"""

from __future__ import annotations

from .language import Messages

__all__ = ["MESSAGES"]

MESSAGES = Messages(
    {
        # ------------------------------------------------------------------ verdicts
        "passed": {"en": "✔ Exercise {exercise} passed", "zh": "✔ 练习 {exercise} 通过"},
        "not_yet": {
            "en": "✘ Exercise {exercise}: not yet — {problem}",
            "zh": "✘ 练习 {exercise}：还没通过 — {problem}",
        },
        "also": {"en": "    also: {problem}", "zh": "    另外：{problem}"},
        "not_implemented": {
            "en": "not implemented yet (the stub still raises NotImplementedError)",
            "zh": "还没有实现（练习里的桩函数仍在抛出 NotImplementedError）",
        },
        "your_code_raised": {"en": "your code raised {name}: {message}", "zh": "你的代码抛出了 {name}：{message}"},
        "not_defined": {
            "en": "{names} is not defined yet: run the exercise cell first",
            "zh": "{names} 还没有定义：请先运行练习的代码格",
        },
        # ------------------------------------------------------------------ exercise 1
        "encode_not_string": {
            "en": "my_encode_json must return a string, found {name}",
            "zh": "my_encode_json 必须返回字符串，实际返回了 {name}",
        },
        "not_compact": {
            "en": "my_encode_json is not compact: got {got}; use separators=(',', ':')",
            "zh": "my_encode_json 的输出不紧凑：得到 {got}；请用 separators=(',', ':')",
        },
        "keys_not_sorted": {
            "en": "my_encode_json does not sort keys: got {got}",
            "zh": "my_encode_json 没有给键排序：得到 {got}",
        },
        "escapes_chinese": {
            "en": "my_encode_json escapes Chinese text: got {got}; keep it as-is",
            "zh": "my_encode_json 把中文转义了：得到 {got}；中文应当原样保留",
        },
        "writes_nan": {
            "en": "my_encode_json wrote NaN into the JSON (got {got}); it must refuse NaN",
            "zh": "my_encode_json 把 NaN 写进了 JSON（得到 {got}）；它必须拒绝 NaN",
        },
        "differs_from_series": {
            "en": "my_encode_json({sample}) differs from the series' encoding {expected}",
            "zh": "my_encode_json({sample}) 与本系列的编码 {expected} 不一致",
        },
        "rejected_not_message": {
            "en": "encode_tool_call_rejected must return a ProviderMessage, found {name}",
            "zh": "encode_tool_call_rejected 必须返回 ProviderMessage，实际返回了 {name}",
        },
        "rejected_role": {
            "en": "the role is {role}; a rejection is news from the environment, like a tool result",
            "zh": "角色是 {role}；拒绝和工具结果一样，是环境传回给模型的消息",
        },
        "content_not_json": {"en": "the content is not JSON: {content}", "zh": "content 不是 JSON：{content}"},
        "content_not_object": {
            "en": "the content must be a JSON object, got {content}",
            "zh": "content 必须是一个 JSON 对象，得到 {content}",
        },
        "content_keys": {
            "en": "the content's keys are {keys}; expected call_id, reason, tool_name, type",
            "zh": "content 的键是 {keys}；应当是 call_id、reason、tool_name、type",
        },
        "content_type": {
            "en": '"type" is {type}; expected "tool_call_rejected"',
            "zh": '"type" 是 {type}；应当是 "tool_call_rejected"',
        },
        "content_call_id": {
            "en": "call_id {want} came out as {got}; keep it verbatim",
            "zh": "call_id {want} 被写成了 {got}；请原样保留",
        },
        "content_not_series": {
            "en": "the content is not encoded the series' way: got {content}",
            "zh": "content 没有按本系列的规则编码：得到 {content}",
        },
        # ------------------------------------------------------------------ exercise 2
        "label_actions_array": {"en": "an array of actions", "zh": "一个行动数组"},
        "label_empty_array": {"en": "an empty array", "zh": "空数组"},
        "label_string": {"en": "a string", "zh": "字符串"},
        "label_number": {"en": "a number", "zh": "整数"},
        "label_float": {"en": "a float", "zh": "浮点数"},
        "label_true": {"en": "true", "zh": "true"},
        "label_null": {"en": "null", "zh": "null"},
        "object_rejected": {
            "en": "it rejected the object {obj} ({error}); layer 2 lets every object through",
            "zh": "它拒绝了对象 {obj}（{error}）；第 2 层应当放行所有对象",
        },
        "object_changed": {
            "en": "for the object {obj} it returned {returned}; return the object itself",
            "zh": "对于对象 {obj}，它返回了 {returned}；应当返回对象本身",
        },
        "wrong_layer": {
            "en": "the error for {label} has layer {layer}; expected TOP_LEVEL_OBJECT",
            "zh": "{label} 的错误属于 {layer}；应当是 TOP_LEVEL_OBJECT",
        },
        "wrong_message": {
            "en": "the message for {label} is {message}; start it 'model output must be an object'",
            "zh": "{label} 的错误消息是 {message}；请以 'model output must be an object' 开头",
        },
        "no_expected_found": {
            "en": "the error for {label} does not fill expected= and found=",
            "zh": "{label} 的错误没有填写 expected= 和 found=",
        },
        "raised_other": {
            "en": "{label} ({value}) raised {name}, not InvalidModelOutputError",
            "zh": "{label}（{value}）抛出的是 {name}，不是 InvalidModelOutputError",
        },
        "let_through": {
            "en": "{label} ({value}) was let through; layer 2 must reject it",
            "zh": "{label}（{value}）被放行了；第 2 层必须拒绝它",
        },
        # ------------------------------------------------------------------ exercise 3
        "not_a_prediction": {
            "en": "{label}: {value} is not a prediction (use 1, 2, 3, 4 or None)",
            "zh": "{label}：{value} 不是一个预测（请用 1、2、3、4 或 None）",
        },
        "no_prediction_for": {"en": "no prediction for {labels}", "zh": "{labels} 还没有预测"},
        "unknown_labels": {"en": "unknown labels {labels}", "zh": "不认识的标签 {labels}"},
        "predictions_not_mapping": {
            "en": "predictions must be a dict from label to layer, found {name}",
            "zh": "predictions 必须是从标签到层的字典，实际是 {name}",
        },
        "predictions_left": {
            "en": "{left} of {total} outputs still have no prediction (the ... marks)",
            "zh": "{total} 段输出里还有 {left} 段没有预测（标着 ... 的地方）",
        },
        "predictions_wrong": {
            "en": "{right} of {total} right; look again at {labels} "
            "(diagnose(PREDICTION_OUTPUTS[label]) shows the ladder)",
            "zh": "{total} 个里对了 {right} 个；再看看 {labels}"
            "（diagnose(PREDICTION_OUTPUTS[label]) 会显示逐层检查的结果）",
        },
        # ------------------------------------------------------------------ exercise 4
        "response_type": {
            "en": "a valid reply must give a ModelResponse, found {name}",
            "zh": "合法的回复必须得到 ModelResponse，实际是 {name}",
        },
        "response_action": {"en": "a valid reply gave the action {action}", "zh": "合法的回复给出了行动 {action}"},
        "response_usage": {
            "en": "a valid reply reported usage {usage}; expected TokenUsage(120, 30)",
            "zh": "合法的回复报告的用量是 {usage}；应当是 TokenUsage(120, 30)",
        },
        "request_messages": {
            "en": "the provider did not receive build_provider_messages(history)",
            "zh": "Provider 收到的不是 build_provider_messages(history)",
        },
        "request_budget": {
            "en": "max_output_tokens was {got}, not budget.max_output_tokens (64)",
            "zh": "max_output_tokens 是 {got}，而不是 budget.max_output_tokens（64）",
        },
        "invalid_usage": {
            "en": "the InvalidModelOutputError carries usage={usage}; the 87 tokens were spent, "
            "so it must carry TokenUsage(80, 7)",
            "zh": "InvalidModelOutputError 带的是 usage={usage}；"
            "这 87 个 Token 已经花掉了，所以它必须带上 TokenUsage(80, 7)",
        },
        "invalid_layer": {
            "en": "the error lost the parser's layer (got {layer}, expected TOP_LEVEL_OBJECT)",
            "zh": "错误丢掉了解析器给出的层（得到 {layer}，应当是 TOP_LEVEL_OBJECT）",
        },
        "invalid_raw_text": {
            "en": "the error lost the raw text the parser recorded",
            "zh": "错误丢掉了解析器记录的原始文本",
        },
        "invalid_returned": {
            "en": "an invalid reply must raise InvalidModelOutputError, but complete() returned {returned}",
            "zh": "不合法的回复必须抛出 InvalidModelOutputError，但 complete() 返回了 {returned}",
        },
        "lost_cause": {
            "en": "the ModelProviderError lost its cause; raise it 'from' the ProviderError",
            "zh": "ModelProviderError 丢掉了它的起因；请用 'from' 接在 ProviderError 后面抛出",
        },
        "provider_error_escaped": {
            "en": "a ProviderError escaped; the Kernel only knows ModelProviderError",
            "zh": "ProviderError 漏了出去；Kernel 只认识 ModelProviderError",
        },
        "provider_error_missing": {
            "en": "a failing provider must raise ModelProviderError",
            "zh": "Provider 调用失败时必须抛出 ModelProviderError",
        },
        # ------------------------------------------------------------------ exercise 5
        "correction_not_string": {
            "en": "correction_message must return a string, found {name}",
            "zh": "correction_message 必须返回字符串，实际返回了 {name}",
        },
        "for_layer": {"en": "for a layer-{layer} rejection {problem}", "zh": "对于第 {layer} 层的拒绝，{problem}"},
        "no_layer": {
            "en": "the message does not name the layer (layer {layer})",
            "zh": "消息没有说明是哪一层（第 {layer} 层）",
        },
        "no_expected": {
            "en": "the message does not say what was expected ({expected})",
            "zh": "消息没有说期望的是什么（{expected}）",
        },
        "no_found": {
            "en": "the message does not say what was found ({found})",
            "zh": "消息没有说实际得到的是什么（{found}）",
        },
        "no_one_object": {
            "en": "the message does not ask for exactly one JSON object",
            "zh": "消息没有要求模型只回复一个 JSON 对象",
        },
        "echoes_raw": {
            "en": "the message echoes the whole raw reply ({length} characters)",
            "zh": "消息把整段原始回复（{length} 个字符）原样抄了回去",
        },
        "too_long": {
            "en": "the message has {length} characters; keep it under {limit}",
            "zh": "消息有 {length} 个字符；请控制在 {limit} 个以内",
        },
        # ------------------------------------------------------------------ exercise 6
        "pairs_not_list": {
            "en": "pair_results must return a list of (call_id, tool_name, content), found {name}",
            "zh": "pair_results 必须返回 (call_id, tool_name, content) 组成的列表，实际是 {name}",
        },
        "pair_count": {
            "en": "expected {want} pairs (one per tool result), got {got}: {pairs}",
            "zh": "应当有 {want} 对（每个工具结果一对），得到 {got} 对：{pairs}",
        },
        "pairs_wrong": {
            "en": "results for {ids} were paired with the wrong call (got {pairs}); "
            "match on call_id exactly, not on position",
            "zh": "{ids} 的结果配错了调用（得到 {pairs}）；请按 call_id 精确匹配，不要按位置",
        },
        "orphan_raised": {
            "en": "a result for an unknown call_id raised {name}; raise ValueError",
            "zh": "call_id 未知的结果抛出了 {name}；应当抛出 ValueError",
        },
        "orphan_accepted": {
            "en": "a result whose call_id matches no earlier call was accepted; raise ValueError",
            "zh": "一个 call_id 对不上任何先前调用的结果被接受了；应当抛出 ValueError",
        },
    }
)
