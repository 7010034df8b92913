"""The few words the notebooks' own code cells print, in the edition's language.

The code cells of ``notebooks/en`` and ``notebooks/zh`` are the same bytes (a test compares
them), so a cell that wrote ``print("same action as by hand:", ...)`` would greet a Chinese
reader in English. Such a cell writes ``say("same_action", ...)`` instead: the label comes
from the catalog below, in the language of the folder the notebook runs in, and the values
follow it exactly as ``print`` would show them. Names of code (``encode_json``, ``tools``,
``message``) are not labels and stay in the cells.

``layer_label`` and ``layer_title`` name a validation layer the way the edition's ladders do.
"""

from __future__ import annotations

from .ladder import layer_label, layer_title
from .language import Messages

__all__ = ["MESSAGES", "layer_label", "layer_title", "say"]

MESSAGES = Messages(
    {
        # ------------------------------------------------------------------ 01: the three files
        "same_action": {"en": "same action as by hand:", "zh": "和手工解析得到的行动相同："},
        "raised_at": {"en": "raised: {error} at {layer}", "zh": "{layer}抛出了 {error}"},
        "usage": {"en": "usage: ", "zh": "Token 用量："},
        "refused_it": {"en": "{layer} refused it: {message}", "zh": "{layer}拒绝了它：{message}"},
        # ------------------------------------------------------------------ 02: message conversion
        "before": {"en": "before:", "zh": "转换前："},
        "after": {"en": "after: ", "zh": "转换后："},
        "items_to_messages": {
            "en": "{items} items -> {messages} messages",
            "zh": "{items} 个历史项 -> {messages} 条消息",
        },
        "by_position": {"en": "by position:", "zh": "按位置配对："},
        "dumps_defaults": {"en": "json.dumps defaults:", "zh": "json.dumps 默认参数："},
        "lengths": {
            "en": "length: {dumps} vs {ours} characters",
            "zh": "长度：json.dumps {dumps} 个字符，encode_json {ours} 个字符",
        },
        "same_data": {"en": "same data:               ", "zh": "数据相同："},
        "same_text_dumps": {"en": "same text, json.dumps:   ", "zh": "文本相同（json.dumps）："},
        "same_text_encode_json": {"en": "same text, encode_json:  ", "zh": "文本相同（encode_json）："},
        "encode_json_refused": {"en": "encode_json refused:", "zh": "encode_json 拒绝了："},
        "layer_says": {"en": "{layer}: {message}", "zh": "{layer}：{message}"},
        "same_bytes": {"en": "same data, same prompt bytes:", "zh": "数据相同，提示词字节也相同："},
        # ------------------------------------------------------------------ 03: the adapter's flow
        "type_of": {"en": "{name} is a {kind}", "zh": "{name} 的类型是 {kind}"},
        "total": {"en": "{usage} total: {total}", "zh": "{usage} 合计：{total}"},
        "in_out": {"en": "{name} {input} in, {output} out", "zh": "{name} 输入 {input}，输出 {output}"},
        "kernel_catches": {"en": "the Kernel catches:", "zh": "Kernel 捕获到："},
        "its_cause": {"en": "its __cause__:     ", "zh": "它的 __cause__："},
        "tokens_spent": {"en": "tokens spent so far:", "zh": "到目前为止花掉的 Token："},
        "raised_caused_by": {"en": "raised: {error} caused by {cause}", "zh": "抛出：{error}，原因是 {cause}"},
        "carries_usage": {"en": "carries a usage:", "zh": "带着 usage 吗："},
        "calls_recorded": {"en": "provider calls recorded:", "zh": "记录下的 Provider 调用次数："},
        "usage_on_error": {"en": "usage on the error:", "zh": "错误上带的 usage："},
        # ------------------------------------------------------------------ 04: action parsing
        "layer_refuses": {"en": "✘ {layer} refuses", "zh": "✘ {layer}拒绝"},
        "passes": {"en": "✔ passes, hands on {value}", "zh": "✔ 通过，交给下一层：{value}"},
        "json_loads_picks": {"en": "json.loads picks:", "zh": "json.loads 选中的是："},
        "repairing_parser": {"en": "a repairing parser would run:", "zh": "一个“修补”型解析器会执行："},
        "reply_and_correction": {
            "en": "reply: {reply} characters; correction: {correction} characters",
            "zh": "回复：{reply} 个字符；纠错消息：{correction} 个字符",
        },
        "exit_status": {"en": "exit status:", "zh": "退出状态："},
        "prediction": {
            "en": "{mark} {name}: you said {said}, the parser says {actual}   {text}",
            "zh": "{mark} {name}：你猜 {said}，解析器给出 {actual}   {text}",
        },
        "refused_at_layer": {
            "en": "{text}: refused at layer {number}: {message}",
            "zh": "{text}：在第 {number} 层被拒绝：{message}",
        },
        "crashed": {"en": "{text}: crashed with {error}: {message}", "zh": "{text}：崩溃了，{error}: {message}"},
        # ------------------------------------------------------------------ 07: build it yourself
        "checked_folder": {"en": "verify checks the folder", "zh": "verify 检查的文件夹："},
    }
)


def say(key: str, *values: object, **fields: object) -> None:
    """``print(label, *values)`` with the label in the edition's language; ``fields`` fill the label's blanks.

    A Chinese label ends in a full-width colon, which carries its own space, so none is added after it.
    """
    label = MESSAGES.say(key, None, **fields)
    if not values:
        print(label)
    elif label.endswith("："):
        print(label + " ".join(map(str, values)))
    else:
        print(label, *values)
