"""capstore.openai_agents: the OpenAI Agents SDK with a model that passes on only the turn's
tools, over a fake Model (no network)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from capstore.openai_agents import SelectingModel


@function_tool
def forecast_revenue(quarter: str) -> str:
    """Forecast next quarter's revenue from the sales pipeline."""
    return f"revenue forecast for {quarter}: 4.2M"


@function_tool
def forecast_demand(quarter: str) -> str:
    """Forecast product demand for a quarter from past sales."""
    return "+8%"


@function_tool
def find_invoice(quarter: str) -> str:
    """Find an invoice by quarter or customer in the billing system."""
    return f"INV-{quarter}-001.pdf"


@function_tool
def send_email(to: str, subject: str) -> str:
    """Send an email message to a contact, optionally with an attachment."""
    return f"sent {subject!r} to {to}"


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return "sunny"


TOOLS = [forecast_revenue, forecast_demand, find_invoice, send_email, get_weather]


def text(value: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="m", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=value, annotations=[])],
    )  # fmt: skip


class FakeModel(Model):
    """Replies with a function call for a forecast message, then text; records the tools."""

    def __init__(self) -> None:
        self.offered: list[list[str]] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.offered.append([t.name for t in tools])
        items = [input] if isinstance(input, str) else input
        last = items[-1]
        if isinstance(last, dict) and last.get("type") == "function_call_output":
            return ModelResponse(output=[text(f"done: {last['output']}")], usage=Usage(), response_id=None)
        if "forecast_revenue" in self.offered[-1] and len(self.offered) == 1:
            call = ResponseFunctionToolCall(
                type="function_call", name="forecast_revenue", call_id="o1", arguments=json.dumps({"quarter": "Q3"})
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        return ModelResponse(output=[text("ok")], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_each_model_call_gets_the_turns_tools() -> None:
    set_tracing_disabled(True)  # nothing leaves the machine
    fake = FakeModel()
    model = SelectingModel(fake)
    agent = Agent(name="assistant", model=model, tools=TOOLS)

    async def conversation() -> tuple[Any, Any]:
        first = await Runner.run(agent, "forecast Q3 revenue and demand")
        second = await Runner.run(agent, [*first.to_input_list(), {"role": "user", "content": "now email the Q3 invoice to Bob"}])
        return first, second

    first, second = asyncio.run(conversation())
    assert "4.2M" in first.final_output and second.final_output == "ok"
    step1, step2, step3 = fake.offered
    assert {"forecast_revenue", "forecast_demand"} <= set(step1) and "send_email" not in step1
    assert step2 == step1
    assert {"send_email", "find_invoice"} <= set(step3) and step3[: len(step1)] == step1
    assert "get_weather" not in step3
    assert model.last_selection is not None
