"""capstore.pydantic_ai: PydanticAI's per-step tool preparation over its FunctionModel."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from capstore.pydantic_ai import ToolSelection


def forecast_revenue(quarter: str) -> str:
    """Forecast next quarter's revenue from the sales pipeline."""
    return f"revenue forecast for {quarter}: 4.2M"


def forecast_demand(quarter: str) -> str:
    """Forecast product demand for a quarter from past sales."""
    return "+8%"


def find_invoice(quarter: str) -> str:
    """Find an invoice by quarter or customer in the billing system."""
    return f"INV-{quarter}-001.pdf"


def send_email(to: str, subject: str) -> str:
    """Send an email message to a contact, optionally with an attachment."""
    return f"sent {subject!r} to {to}"


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return "sunny"


def test_each_step_gets_the_turns_tools() -> None:
    offered: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append([t.name for t in info.function_tools])
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"done: {last.content}")])
        if len(offered) == 1 and "forecast_revenue" in offered[0]:
            return ModelResponse(parts=[ToolCallPart("forecast_revenue", {"quarter": "Q3"}, tool_call_id="p1")])
        return ModelResponse(parts=[TextPart("ok")])

    selection = ToolSelection()
    agent = Agent(
        FunctionModel(model),
        tools=[forecast_revenue, forecast_demand, find_invoice, send_email, get_weather],
        capabilities=[selection.capability()],
    )
    first = agent.run_sync("forecast Q3 revenue and demand")
    assert "4.2M" in first.output
    second = agent.run_sync("now email the Q3 invoice to Bob", message_history=first.all_messages())
    assert second.output == "ok"
    step1, step2, step3 = offered
    assert {"forecast_revenue", "forecast_demand"} <= set(step1) and "send_email" not in step1
    assert step2 == step1  # the run's second step: the same turn
    assert {"send_email", "find_invoice"} <= set(step3) and step3[: len(step1)] == step1  # carried on
    assert "get_weather" not in step3
    assert selection.last_selection is not None and "send_email" in selection.last_selection.names


def test_a_conversation_continued_in_a_new_process_is_read_from_its_history() -> None:
    offered: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append([t.name for t in info.function_tools])
        return ModelResponse(parts=[TextPart("ok")])

    tools = [forecast_revenue, forecast_demand, find_invoice, send_email, get_weather]
    first = Agent(FunctionModel(model), tools=tools, capabilities=[ToolSelection().capability()])
    history = first.run_sync("forecast Q3 revenue").all_messages()
    # Another ToolSelection (a restarted process): the history rebuilds the carried list.
    again = Agent(FunctionModel(model), tools=tools, capabilities=[ToolSelection().capability()])
    again.run_sync("and email it to Bob", message_history=history)
    assert offered[1][: len(offered[0])] == offered[0] and "send_email" in offered[1]
