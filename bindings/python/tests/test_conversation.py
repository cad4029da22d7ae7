"""Conversation: the carried list across turns, tool uses, state."""

from __future__ import annotations

import pytest

import capstore


def test_carried_list_keeps_its_prefix(bundled: capstore.Store) -> None:
    conversation = bundled.conversation()
    first = conversation.select("I need to fly from Berlin to Lisbon next Friday")
    assert "travel/search_flights" in first.names
    second = conversation.select("what's the weather looking like there that weekend")
    assert second.names[: len(first)] == first.names  # appended: the prefix is cached
    assert "weather/get_forecast" in second.names[len(first) :]
    kinds = {t.name: t.channel_kind for t in second}
    assert kinds["weather/get_forecast"] == "message"
    assert "kept" in kinds.values()
    third = conversation.select("thanks!")
    assert third.names == second.names


def test_record_tool_use_takes_exported_and_qualified_names(bundled: capstore.Store) -> None:
    conversation = bundled.conversation(provider="anthropic")
    selection = conversation.select("search flights from Berlin to Lisbon on Friday")
    assert selection.provider == conversation.provider == "anthropic"
    exported = selection.export_names[selection.names.index("travel/search_flights")]
    assert exported == "search_flights"
    conversation.record_tool_use(exported)
    conversation.record_tool_use("travel/search_flights")
    with pytest.raises(capstore.ToolNotFoundError, match="no_such_tool"):
        conversation.record_tool_use("no_such_tool")
    state = conversation.to_json()
    assert '"travel/search_flights"' in state  # recorded under its qualified name


def test_state_round_trips(bundled: capstore.Store) -> None:
    messages = ["open a pull request for my branch", "and request a review from Ana", "ok, merge it"]
    straight = bundled.conversation()
    lists = [straight.select(m).names for m in messages]

    resumed = bundled.conversation()
    resumed.select(messages[0])
    other = bundled.conversation()
    other.restore(resumed.to_json())
    assert [other.select(m).names for m in messages[1:]] == lists[1:]
    with pytest.raises(capstore.CapstoreError, match="conversation state"):
        other.restore("{")


def test_max_tools_is_the_list_length(bundled: capstore.Store) -> None:
    conversation = bundled.conversation(max_tools=12)
    for message in [
        "I need to fly from Berlin to Lisbon next Friday",
        "what's the weather looking like there that weekend",
        "open a pull request for my branch",
        "email Ana the quarterly report",
    ]:
        assert len(conversation.select(message)) <= 12


def test_discovered_tools_stay(bundled: capstore.Store) -> None:
    conversation = bundled.conversation()
    conversation.select("hello")
    conversation.record_discovered(["payments/refund_charge"])
    assert "payments/refund_charge" in conversation.select("thanks").names
    with pytest.raises(capstore.ToolNotFoundError):
        conversation.record_discovered(["nope"])


def test_a_bad_policy_fails_at_once(bundled: capstore.Store) -> None:
    with pytest.raises(capstore.PolicyError):
        bundled.conversation(policy={"history_decay": -1})


MAIL_TOOLS = [
    {"name": "mail_login", "description": "Log in to the mail service with a user id", "source": "mail"},
    {"name": "send_message", "description": "Send a message to a contact", "source": "mail"},
    {"name": "delete_message", "description": "Delete a message by its id", "source": "mail"},
]


def test_recorded_calls_are_learned_and_bring_the_tool_called_first() -> None:
    store = capstore.Store.from_tools(MAIL_TOOLS)
    conversation = store.conversation()
    assert "mail/mail_login" not in conversation.select("send a message to Ana").names
    for turn in range(3):
        if turn:
            conversation.select("send a message to Ana")
        conversation.record_tool_use("mail_login")
        conversation.record_tool_use("send_message")
    conversation.finish()
    conversation.finish()  # counts once
    # A new conversation: the login comes with the send, as a companion, and says why.
    later = store.conversation(learn=False).select("send a message to Bob")
    login = {t.name: t for t in later}["mail/mail_login"]
    assert login.channel_kind == "companion"
    assert "called before mail/send_message in 3 of its 3 turns" in login.reasons


def test_turns_are_queued_and_written_when_the_conversation_finishes_or_goes() -> None:
    store = capstore.Store.from_tools(MAIL_TOOLS)
    version = store.version
    conversation = store.conversation()
    for _ in range(3):
        conversation.select("send a message to Ana")
        conversation.record_tool_use("mail_login")
        conversation.record_tool_use("send_message")
    # Two turns ended, queued: no store transaction yet.
    assert store.version == version
    conversation.finish()
    assert store.version == version + 1
    # A conversation dropped without finish: its last turn is written all the same.
    dropped = store.conversation()
    dropped.select("send a message to Bob")
    dropped.record_tool_use("send_message")
    del dropped
    assert store.version == version + 2


def test_a_conversation_opened_without_learning_teaches_nothing() -> None:
    store = capstore.Store.from_tools(MAIL_TOOLS)
    conversation = store.conversation(learn=False)
    for _ in range(3):
        conversation.select("send a message to Ana")
        conversation.record_tool_use("mail_login")
        conversation.record_tool_use("send_message")
    conversation.finish()
    assert "mail/mail_login" not in store.conversation().select("send a message to Bob").names


def test_suspend_and_resume_hand_the_conversation_over(bundled: capstore.Store) -> None:
    messages = ["open a pull request for my branch", "and request a review from Ana", "ok, merge it"]
    straight = bundled.conversation(learn=False)
    expected = [straight.select(m).names for m in messages]
    first = bundled.conversation(learn=False)
    first.select(messages[0])
    first.record_tool_use("github/create_pull_request")
    state = first.suspend()
    assert '"turn"' in state and "github/create_pull_request" in state  # the turn under way
    # The suspended object is a new conversation: nothing carried.
    assert first.select(messages[2]).names != expected[2]
    second = bundled.conversation(learn=False)
    second.resume(state)
    assert second.select(messages[1]).names[: len(expected[0])] == expected[0]
    with pytest.raises(capstore.CapstoreError, match="conversation state"):
        second.resume('{"turn": {"called": []}}')


def test_explain_says_each_reason_once_and_when_nothing_matched(bundled: capstore.Store) -> None:
    for message in [
        "book a flight to Lisbon and email the itinerary to Ana",
        "create a calendar event for Friday, then send a Slack message to the team",
    ]:
        for tool in bundled.select(message):
            assert len(set(tool.reasons)) == len(tool.reasons), tool
        explained = bundled.select(message).explain()
        assert "list size: " in explained and "max_turn_tools" in explained
    store = capstore.Store.from_tools(
        [{"type": "function", "function": {"name": "get_forecast", "description": "Weather forecast for a city."}}]
    )
    nothing = store.select("hello there!")
    assert nothing.no_match and len(nothing) == 0
    assert "nothing matched" in nothing.explain() and "on_no_match" in nothing.explain()
    assert "max_turn_tools" in nothing.size
    capped = bundled.select("book a flight and a hotel in Lisbon and rent a car", max_tools=2)
    assert any(why.startswith("over the turn's limit of 2 tools (") and "max_turn_tools" in why for _, why in capped.dropped)
