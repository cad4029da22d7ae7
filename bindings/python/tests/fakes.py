"""What the framework tests share: an agent's tools (forecasts, invoices and email, and a few
more) and a LangChain chat model that replays replies and records the tools bound each call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from pydantic import Field


@tool
def forecast_revenue(quarter: str) -> str:
    """Forecast next quarter's revenue from the sales pipeline."""
    return f"revenue forecast for {quarter}: 4.2M"


@tool
def forecast_demand(quarter: str, product: str = "all") -> str:
    """Forecast product demand for a quarter from past sales."""
    return f"demand forecast for {quarter}: +8%"


@tool
def forecast_by_region(quarter: str) -> str:
    """Break a sales forecast down by region."""
    return "EMEA 40%, Americas 45%, APAC 15%"


@tool
def find_invoice(quarter: str, customer: str = "") -> str:
    """Find an invoice by quarter or customer in the billing system."""
    return f"INV-{quarter}-001.pdf"


@tool
def send_email(to: str, subject: str, body: str = "", attachment: str = "") -> str:
    """Send an email message to a contact, optionally with an attachment."""
    return f"sent {subject!r} to {to}"


@tool
def lookup_contact(name: str) -> str:
    """Look up a contact's email address by name."""
    return f"{name.lower()}@example.com"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@tool
def create_issue(repo: str, title: str) -> str:
    """Open an issue in a GitHub repository."""
    return f"opened {repo}#1"


TOOLS: list[BaseTool] = [
    forecast_revenue,
    forecast_demand,
    forecast_by_region,
    find_invoice,
    send_email,
    lookup_contact,
    get_weather,
    create_issue,
]
FORECASTS = {"forecast_revenue", "forecast_demand", "forecast_by_region"}
EMAIL = {"send_email", "find_invoice"}


class RecordingChatModel(GenericFakeChatModel):
    """Replays ``messages`` (AIMessages, in call order) and records the tool names bound to each
    call (``bound``)."""

    bound: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingChatModel:
        self.bound.append([t.name if isinstance(t, BaseTool) else str(t.get("name", t)) for t in tools])
        return self


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    """A reply that calls one tool."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])
