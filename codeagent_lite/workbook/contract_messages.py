"""What ``contract``'s checks say a learner's code returned, in English and Chinese.

A sibling of ``contract`` so that module keeps only its checks. These are the ``got`` halves
of verify's sentence ("given …, expected …, got …"), filled in by a check's judge in verify's
own process, from what the sandboxed probe sent back. The values inside them (``repr`` of what
came back) and the series' English phrases stay as they are.
"""

from __future__ import annotations

from .language import Messages

__all__ = ["MESSAGES"]

MESSAGES = Messages(
    {
        # ------------------------------------------------------------------ step 1: messages
        "not_a_sequence": {"en": "{value}, which is not a sequence of messages", "zh": "{value}，它不是消息序列"},
        "not_a_provider_message": {
            "en": "{value}, which is not a ProviderMessage",
            "zh": "{value}，它不是 ProviderMessage",
        },
        "not_strings": {
            "en": "{value}, whose role and content are not both strings",
            "zh": "{value}，它的 role 和 content 不都是字符串",
        },
        "messages_for_one_item": {
            "en": "{count} messages for one history item",
            "zh": "一个历史项变成了 {count} 条消息",
        },
        "content_not_json": {"en": "the content {content}, which is not JSON", "zh": "content {content}，它不是 JSON"},
        "role": {"en": "role {role}", "zh": "role 为 {role}"},
        "decodes_to": {"en": "content that decodes to {value}", "zh": "解码后是 {value} 的 content"},
        "role_and_content": {
            "en": "role {role} with content that decodes to {value}",
            "zh": "role 为 {role}，content 解码后是 {value}",
        },
        "call_ids": {"en": "call_id values {ids}", "zh": "call_id 分别是 {ids}"},
        "messages_summary": {"en": "{count} messages: {summary}", "zh": "{count} 条消息：{summary}"},
        "key_order": {"en": "keys in the order {order} in {content}", "zh": "{content} 里键的顺序是 {order}"},
        "exactly": {"en": "exactly {value}", "zh": "与 {value} 完全相同"},
        "the_message": {"en": "the message {value}", "zh": "消息 {value}"},
        "and_no_error": {"en": "{value} and no error", "zh": "{value}，没有抛出错误"},
        # ------------------------------------------------------------------ step 2: the adapter
        "usage": {"en": "usage {value}", "zh": "usage 为 {value}"},
        "provider_calls": {"en": "{count} calls to the provider", "zh": "调用了 Provider {count} 次"},
        "called_with": {"en": "the provider was called with {arguments}", "zh": "Provider 收到的参数是 {arguments}"},
        "built_times": {
            "en": "build_provider_messages called {count} times, with {histories}",
            "zh": "build_provider_messages 被调用了 {count} 次，参数是 {histories}",
        },
        "parsed_with": {"en": "parse_json_action called with {texts}", "zh": "parse_json_action 收到的参数是 {texts}"},
        "wrong_cause": {
            "en": "ModelProviderError with __cause__ {cause} (raise ... from error)",
            "zh": "__cause__ 为 {cause} 的 ModelProviderError（应当 raise ... from error）",
        },
        "no_error_but": {"en": "no error but {value}", "zh": "没有抛出错误，而是返回了 {value}"},
        "disguised": {
            "en": "ModelProviderError, which hides a programming error as a network problem",
            "zh": "ModelProviderError，它把程序错误伪装成了网络问题",
        },
        "error_usage": {
            "en": "InvalidModelOutputError with usage={usage}",
            "zh": "usage={usage} 的 InvalidModelOutputError",
        },
        "error_layer": {"en": "InvalidModelOutputError with {layer}", "zh": "{layer}的 InvalidModelOutputError"},
        # ------------------------------------------------------------------ steps 3 and 4: the parser
        "rejected_at": {"en": "a rejection at {layer}: {message}", "zh": "在{layer}被拒绝：{message}"},
        "right_layer": {"en": "the right layer, but the message {message}", "zh": "层对了，但消息是 {message}"},
        "accepted_as": {"en": "no error: it was accepted as {value}", "zh": "没有报错：它被当成 {value} 接受了"},
        # ------------------------------------------------------------------ what a sample shows
        "described_rejection": {"en": "✘ rejected at {layer}", "zh": "✘ 在{layer}被拒绝"},
        "provider_error_cause": {"en": "ModelProviderError, cause {cause}", "zh": "ModelProviderError，原因是 {cause}"},
        "invalid_at": {
            "en": "InvalidModelOutputError at {layer}, usage={usage}",
            "zh": "{layer}的 InvalidModelOutputError，usage={usage}",
        },
    }
)
