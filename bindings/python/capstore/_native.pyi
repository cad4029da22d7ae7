"""Type stubs of capstore's native module (``capstore._native``, built from Rust with PyO3)."""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, final

__version__: str

Provider = Literal["openai", "openai-chat", "openai-responses", "anthropic"]
"""A provider's request shape: OpenAI chat completions (``"openai"``), OpenAI responses, or
Anthropic messages."""

ToolDict = Mapping[str, Any]
"""A tool as a dict: OpenAI (chat completions or responses), Anthropic, MCP or capstore's own
record, told apart by its keys."""

class CapstoreError(Exception):
    """Base class of every error capstore raises; the message is the library's."""

class CatalogError(CapstoreError):
    """A catalog file could not be read, parsed, checked or loaded (the message names the file
    and the JSON path)."""

class SelectError(CapstoreError):
    """A selection could not be made."""

class PolicyError(CapstoreError):
    """A selection policy (or a setting given for one) is out of range or malformed."""

class EmbedError(CapstoreError):
    """The embedding model could not be loaded, or texts could not be embedded."""

class McpError(CapstoreError):
    """An mcpServers configuration could not be read, or a live MCP server could not be used."""

class ToolError(CapstoreError):
    """A tool given as a dict is malformed, invalid by the store's rules, or already in the
    store."""

class ToolNotFoundError(CapstoreError):
    """No tool of that name (qualified or exported) is in the store."""

def estimate_tokens(tool: ToolDict) -> int:
    """Estimated tokens of one tool definition as sent to a model (name, description and input
    schema at four bytes a token): capstore's ``context::estimate_tokens``. ``tool`` is a dict
    in any shape ``Store.from_tools`` takes."""

@final
class MiniLm:
    """all-MiniLM-L6-v2, run on the CPU by capstore (``capstore::embed::MiniLm``), read from a
    directory holding its ``config.json``, ``tokenizer.json`` and ``model.safetensors``
    (``bash scripts/minilm.sh`` fetches them and prints the directory). Nothing is downloaded.

    Pass it as ``embedder=`` to ``Store.select`` or ``Store.conversation`` for hybrid
    selection (BM25 fused with the nearest tool vectors), or call ``embed(texts)`` for the
    vectors themselves (384 floats a text, unit length), e.g. as the embedding function of a
    LangGraph store. Loading and embedding release the GIL."""

    def __init__(self, path: str | PathLike[str]) -> None:
        """Loads the model from the directory ``path``; raises ``EmbedError`` naming the file
        that is missing or wrong."""
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector (a list of ``dimensions`` floats, unit length) per text, in order: what
        sentence-transformers' all-MiniLM-L6-v2 gives for the same texts."""
    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        """``embed(texts)``: the model is itself an embedding function."""
    def embed_one(self, text: str) -> list[float]:
        """The vector of one text: ``embed([text])[0]``."""
    @property
    def model_id(self) -> str:
        """The model's name and version (``sentence-transformers/all-MiniLM-L6-v2``)."""
    @property
    def dimensions(self) -> int:
        """The length of every vector (384)."""

@final
class SelectedTool:
    """One tool of a selection: its definition in the provider's shape, and why it was
    chosen."""

    @property
    def name(self) -> str:
        """The qualified name (``source/name``), the store's key."""
    @property
    def export_name(self) -> str:
        """The provider-safe name the model sees and calls it by (``definition``'s name)."""
    @property
    def definition(self) -> dict[str, Any]:
        """The definition, a dict in the provider's shape."""
    @property
    def reasons(self) -> list[str]:
        """Why it was selected, strongest first, as sentences (the library's ``Reason``)."""
    @property
    def channel(self) -> str:
        """The channel that brought it, as a phrase: "asked for by this message", "brought
        by a skill the message matched", "from the conversation", "brought by a tool it goes
        with", "kept from the last turn", "pinned"."""
    @property
    def channel_kind(
        self,
    ) -> Literal["message", "skill", "conversation", "companion", "kept", "pinned", "all"]:
        """The channel's kind: "message", "skill", "conversation", "companion", "kept",
        "pinned" or "all"."""
    @property
    def rank(self) -> int:
        """Its position by relevance (0: the most relevant), whatever the send order."""
    @property
    def score(self) -> float:
        """The relevance it was ranked by."""
    @property
    def tokens(self) -> int:
        """Estimated tokens of its definition."""

@final
class Selection:
    """The tools to send for one turn, in send order, with their definitions in the
    provider's shape and the reasons for each.

    ``definitions`` is the ``tools`` array of the provider's request; iterating gives the
    ``SelectedTool``s. The Python objects are made when first asked for."""

    @property
    def tools(self) -> list[SelectedTool]:
        """The selected tools (``SelectedTool``: definition, reasons, channel), in send
        order."""
    @property
    def definitions(self) -> list[dict[str, Any]]:
        """The tool definitions in the provider's shape, in send order: the request's
        ``tools``."""
    @property
    def names(self) -> list[str]:
        """The selected tools' qualified names, in send order."""
    @property
    def export_names(self) -> list[str]:
        """The names the model sees (the definitions' names), in send order."""
    @property
    def provider(self) -> Literal["openai", "openai-responses", "anthropic"]:
        """The provider whose shape the definitions are in."""
    @property
    def tokens(self) -> int:
        """Estimated tokens of all the definitions."""
    @property
    def version(self) -> int:
        """The store version the selection read."""
    @property
    def no_match(self) -> bool:
        """True when nothing matched and the policy's no-match rule applied."""
    @property
    def skills(self) -> list[str]:
        """The skills that contributed."""
    @property
    def dropped(self) -> list[tuple[str, str]]:
        """Near misses: ``(name, why it was not sent)``."""
    def explain(self) -> str:
        """One line per tool: its exported name, the channel that brought it, and its reasons
        (each said once); then, when nothing matched, a line that says so; the list's size
        and where its limits come from; and the near misses with why each was not sent."""
    @property
    def size(self) -> str:
        """Why the list has its size: the message's asks and the limits that applied, with the
        policy fields they come from."""
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[SelectedTool]: ...
    def __contains__(self, name: str) -> bool:
        """Whether a tool (qualified or exported name) was selected."""

@final
class Conversation:
    """A multi-turn conversation over a store (``Store.conversation(...)``): ``select`` each
    user message in turn and ``record_tool_use`` each tool the model calls.

    The tool list is carried across turns: the last turn's tools keep their place and the
    tools a new message needs are appended, so that the request's prefix (and the provider's
    prompt cache) survives; a list grown past ``max_tools`` is re-packed once, the stalest
    tools out first. Each selected tool says which channel brought it (this message, the
    conversation, a companion, kept from an earlier turn, pinned).

    Each turn's recorded calls are counted into the store's usage, unless the conversation
    was opened with ``learn=False``: later selections then bring the tools that were called
    together (a login before a send). A turn ends when the next one starts; its evidence is
    queued on the store's queue (shared by its conversations, no store transaction) and
    written in batches (64 turns, or a turn a second after the oldest held), and at
    ``finish``, when the conversation is dropped, and when the store is. A selection reads
    only what was written."""

    def select(self, message: str) -> Selection:
        """The tools to send for the next user message, read with the conversation so far;
        the selection is remembered for the next turn's list, and the turn before ends (its
        calls are queued for learning; ``finish`` also writes them). Releases the GIL."""
    def record_tool_use(self, name: str) -> None:
        """Remembers that the model called the tool ``name``: the name it was sent under (the
        exported name, as in the model's tool call) or its qualified name. A tool called is
        recent, and fresh again in the carried list. Raises ``ToolNotFoundError`` for a name
        that is no tool of the store."""
    def finish(self) -> None:
        """Ends the last turn: its recorded calls, and every finished turn the store's queue
        holds, are counted into the store's usage now (unless the conversation was opened with
        ``learn=False``). ``select`` ends the turn before without writing; calling it twice
        counts once."""
    def record_discovered(self, names: Sequence[str]) -> None:
        """Remembers tools the model found with a tool search (qualified or exported names),
        so that they stay selected from the next turn on."""
    @property
    def provider(self) -> Literal["openai", "openai-responses", "anthropic"]:
        """The provider whose shape the definitions are in."""
    def to_json(self) -> str:
        """The conversation's state (earlier messages, tools used, the carried list) as JSON
        text, to keep it and resume it elsewhere with ``Conversation.restore``."""
    def restore(self, state: str) -> None:
        """Puts back a state ``to_json`` gave."""
    def suspend(self) -> str:
        """Hands the whole conversation over as JSON text: ``to_json``'s state and the turn
        under way (the tools it sent and called so far, not yet counted into usage). This
        object is left as a new conversation with nothing under way, so dropping it counts
        nothing; ``resume`` on another (in another process, say) goes on where this one
        stopped, and the turn is counted once, when it ends there. What
        ``capstore.langgraph`` keeps in a thread's state."""
    def resume(self, state: str) -> None:
        """Goes on from a state ``suspend`` gave: the conversation and its turn under way
        replace this one's (a turn under way here is dropped, not counted)."""

@final
class Store:
    """A store of tools (and skills) to select from, each turn, the few that reach the model.

    Open one with ``Store.bundled()``, ``Store.from_catalog(path)``,
    ``Store.from_tools(tools)`` or ``Store.from_mcp_config(path)``, or start empty with
    ``Store()`` and ``add_tools``. Selecting, searching and loading release the GIL; a store
    may be used from several threads."""

    def __init__(self) -> None:
        """An empty store; fill it with ``add_tools``."""
    @staticmethod
    def bundled() -> Store:
        """The catalog bundled with capstore (``catalog/default.json``: 37 skills, 222 tools
        across files, git, GitHub, web, calendar, email, databases, cloud, payments, maps and
        more), with its pinned tools."""
    @staticmethod
    def from_catalog(path: str | PathLike[str]) -> Store:
        """A store loaded from a catalog file (``capstore.catalog/v1``: skills, tools, pinned
        tools), checked whole and loaded in one transaction. Raises ``CatalogError`` naming
        the file and the JSON path at fault."""
    @staticmethod
    def from_tools(tools: Iterable[ToolDict], *, source: str | None = None) -> Store:
        """A store of the given tools: dicts in OpenAI (chat completions or responses),
        Anthropic, MCP or capstore's own shape, told apart per dict. With ``source``, every
        tool is namespaced as an MCP server's would be (``source/name``, tagged ``source``).
        Raises ``ToolError`` naming the tool at fault."""
    @staticmethod
    def from_mcp_config(
        path: str | PathLike[str],
        *,
        connect_timeout: float = 30.0,
        quarantine: bool = False,
        strict: bool = False,
    ) -> Store:
        """A store of the tools of every server of an ``mcpServers`` configuration (Claude
        Desktop's, Claude Code's ``.mcp.json``, Cursor's ``mcp.json``; stdio and Streamable
        HTTP; ``${VAR}`` expanded), connected live through capstore's ``McpHub`` on a runtime
        the store owns: each server's tools are ``server/name`` and kept in step with the
        server while the store lives (``close()`` stops the servers).

        A server that cannot start or answer within ``connect_timeout`` seconds is retried in
        the background; it raises ``McpError`` with ``strict=True``, and gives a
        ``RuntimeWarning`` otherwise (``servers()`` says how each went). With
        ``quarantine=True`` tools are checked against the configuration's trust file as
        ``capstore serve`` does (a changed definition is held back until approved with
        ``capstore approve``)."""
    def add_tools(self, tools: Iterable[ToolDict], *, source: str | None = None) -> list[str]:
        """Adds tools (dicts, in any shape ``from_tools`` takes) in one transaction: all of
        them, or none when one is malformed or already in the store (``ToolError``). Returns
        their qualified names."""
    def select(
        self,
        message: str,
        *,
        max_tools: int | None = None,
        provider: Provider = "openai",
        embedder: MiniLm | None = None,
        lexical_weight: float | None = None,
        policy: Mapping[str, Any] | None = None,
    ) -> Selection:
        """The tools to send for one message: at most ``max_tools`` (default: the policy's,
        24), in the ``provider``'s shape (``"openai"``, ``"openai-responses"`` or
        ``"anthropic"``), each with why it was chosen. With ``embedder`` (a ``MiniLm``),
        hybrid retrieval: BM25 fused with the nearest tool vectors (the tools are embedded the
        first time, then as they change); ``lexical_weight`` fixes BM25's share (else the
        library's curve). ``policy`` is a dict of ``SelectionPolicy`` fields over the default
        (``{"token_budget": 2000}``)."""
    def conversation(
        self,
        *,
        max_tools: int | None = None,
        provider: Provider = "openai",
        embedder: MiniLm | None = None,
        lexical_weight: float | None = None,
        policy: Mapping[str, Any] | None = None,
        learn: bool = True,
    ) -> Conversation:
        """A conversation over this store: ``select`` each user message in turn,
        ``record_tool_use`` for each tool the model calls. It carries the tool list across
        turns (last turn's tools keep their place, new ones are appended), so that providers'
        prompt caches stay warm. ``max_tools`` is the carried list's length (default 24); the
        other settings are ``select``'s. With ``learn`` (the default), each turn's recorded
        calls are counted into the store's usage, so that later selections bring the tools
        called together."""
    def search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        """The ``k`` tools whose text best matches ``query`` by BM25 (the store's index, as
        the ``search_tools`` tool searches), best first: dicts with ``name`` (qualified),
        ``description`` and ``score``."""
    def tools(self) -> list[str]:
        """Every tool's qualified name, in key order."""
    def definition(self, name: str, *, provider: Provider = "openai") -> dict[str, Any]:
        """One tool's definition in the ``provider``'s shape; ``name`` is qualified or
        exported."""
    def export_name(self, name: str) -> str:
        """The provider-safe name the model sees for the tool ``name`` (qualified or
        exported)."""
    def resolve(self, name: str) -> str:
        """The qualified name behind ``name`` (an exported name as the model calls it, or a
        qualified name); raises ``ToolNotFoundError`` if it is no tool of the store."""
    def estimate_tokens(self, name: str) -> int:
        """Estimated tokens of the tool ``name``'s definition (capstore's
        ``estimate_tokens``: four bytes a token); ``name`` is qualified or exported."""
    @property
    def version(self) -> int:
        """The store's version: the number of the last commit (each load or ``add_tools`` is
        one)."""
    def servers(self) -> list[dict[str, Any]]:
        """How each live MCP server's start went (empty unless opened with
        ``from_mcp_config``): dicts with ``name``, ``ok``, ``tools`` (qualified names
        imported), ``error`` (or None), ``seconds``, and ``held`` (tools the quarantine holds
        back, with why)."""
    def close(self) -> None:
        """Stops the live MCP servers (if any); their tools stay in the store. Also done when
        the store is garbage-collected."""
    def __len__(self) -> int:
        """How many tools the store holds."""
    def __contains__(self, name: str) -> bool:
        """Whether ``name`` (qualified or exported) is a tool of the store."""
