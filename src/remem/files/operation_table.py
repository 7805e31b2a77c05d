"""The file and approval operations, one row each (:class:`remem.operations.Operation`): the
tables the ``/v1/files`` and ``/v1/approvals`` routes (:mod:`remem.server.routes_files`,
:mod:`remem.server.routes_approvals`, by the router builder), the MCP file tools, the agent
file tools' names and descriptions (:data:`remem.tools.files.FILE_TOOLS`) and the parity
tests read.

Route names are the endpoints' from before the rows, so are the OpenAPI operation ids; every
file body is its request (``undo``'s an :class:`~remem.files.requests.LsRequest`, as it always
was), every approval body its ``ApproveRequest``, ``RejectRequest`` or ``RecoverRequest``
(``part``), and may be left out. Which file tree, and who acts, are not the requests': the
routes take them as query parameters of the server's (``context``). ``python`` names the
method of :class:`~remem.files.base.FileBackend` (of :class:`~remem.files.approvals.Approvals`
for an approval) that runs the same operation in process.
"""

from __future__ import annotations

from pydantic import BaseModel

from remem.files.approvals import (
    ApproveByIdRequest,
    ApproveRequest,
    ListApprovalsRequest,
    RecoverRequest,
    RejectByIdRequest,
    RejectRequest,
)
from remem.files.requests import (
    EditFileRequest,
    FileHistoryRequest,
    GlobRequest,
    GrepRequest,
    LsRequest,
    ReadFileRequest,
    UndoFileRequest,
    WriteFileRequest,
)
from remem.files.wire import (
    ApprovalOut,
    ApprovalsOut,
    FileHistoryOut,
    FileInfoOut,
    FileListOut,
    FileReadOut,
    GrepMatchesOut,
    UndoneOut,
)
from remem.operations import HttpMethod, McpToolRow, Operation, Route
from remem.requests import Request

__all__ = ["APPROVAL_OPERATIONS", "FILE_OPERATIONS"]


def _file(request: type[Request], result: type[BaseModel], name: str, summary: str,
          description: str, *, writes: bool, python: str, tool: str | None = None,
          about: str = "", method: HttpMethod = "POST",
          part: type[BaseModel] | None = None) -> Operation:
    return Operation(request, result, writes=writes, python=python, command=f"files {name}",
                     tool=None if tool is None else McpToolRow(tool, about),
                     route=Route(method, f"/v1/files/{name}", name, summary, description,
                                 part=part))


FILE_OPERATIONS: tuple[Operation, ...] = (
    _file(LsRequest, FileListOut, "ls", "List a directory",
          "The files and subdirectories directly in ``path``.", writes=False, python="ls",
          tool="ls", about="List the files and directories in a directory."),
    _file(ReadFileRequest, FileReadOut, "read", "Read lines of a file",
          "Lines ``offset`` .. ``offset + limit`` of the file, with its etag.", writes=False,
          python="read", tool="read_file", about="Read a file's lines (from offset, as many "
                                                 "as fit); returns its etag and how many "
                                                 "lines remain."),
    _file(WriteFileRequest, FileInfoOut, "write", "Create or replace a file",
          "Write the file (409 if ``etag`` is stale).", writes=True, python="write",
          tool="write_file", about="Create a file or replace its whole content."),
    _file(EditFileRequest, FileInfoOut, "edit", "Replace exact text in a file",
          "Replace ``old_string`` with ``new_string`` (422 if absent or not unique).",
          writes=True, python="edit", tool="edit_file",
          about="Replace exact text in a file (read it first; old_string must be unique "
                "unless replace_all)."),
    _file(GlobRequest, FileListOut, "glob", "Find files by pattern",
          "Files whose path matches ``pattern``.", writes=False, python="glob", tool="glob",
          about="Find files whose path matches a glob pattern."),
    _file(GrepRequest, GrepMatchesOut, "grep", "Find lines holding a text",
          "Lines holding ``pattern`` literally.", writes=False, python="grep", tool="grep",
          about="Find the lines of files that contain a text."),
    _file(FileHistoryRequest, FileHistoryOut, "history", "A file's history",
          "Every change of ``path``, oldest first.", writes=False, python="history",
          method="GET"),
    _file(UndoFileRequest, UndoneOut, "undo", "Revert a file's latest change",
          "Revert the latest change of the file at ``path``; the file as it is now (null:\n"
          "absent).", writes=True, python="undo", part=LsRequest),
)
"""Every file request's row; the six with a tool are the agents' file tools, in the order
they are offered."""


def _approval(request: type[Request], result: type[BaseModel], method: HttpMethod, path: str,
              name: str, summary: str, description: str, *, writes: bool, python: str,
              part: type[BaseModel] | None = None, command: str | None = None) -> Operation:
    return Operation(request, result, writes=writes, python=python, command=command,
                     route=Route(method, path, name, summary, description, part=part,
                                 optional_body=method == "POST"))


_APPROVAL = "/v1/approvals/{approval_id}"

APPROVAL_OPERATIONS: tuple[Operation, ...] = (
    _approval(ListApprovalsRequest, ApprovalsOut, "GET", "/v1/approvals", "list_approvals",
              "List approvals",
              "The tenant's approvals with ``status`` (default: pending), oldest first.",
              writes=False, python="list_approvals", command="approvals ls"),
    _approval(ApproveByIdRequest, ApprovalOut, "POST", _APPROVAL + "/approve", "approve",
              "Approve a parked operation",
              "Run the parked operation once, with ``edited_arguments`` merged over the parked\n"
              "ones; the approval as it ends (``done``, or ``failed`` with the reason). 403 if "
              "this key\nis the one that asked for it (another key, a human's, must approve).",
              writes=True, python="approve", part=ApproveRequest,
              command="approvals approve"),
    _approval(RejectByIdRequest, ApprovalOut, "POST", _APPROVAL + "/reject", "reject",
              "Reject a parked operation", "Refuse the parked operation: it never runs.",
              writes=True, python="reject", part=RejectRequest,
              command="approvals reject"),
    _approval(RecoverRequest, ApprovalsOut, "POST", "/v1/approvals/recover", "recover",
              "Finish approvals a crash left running",
              "Approvals claimed at least ``stale_after`` seconds ago whose outcome was never "
              "stored\n(the resolver crashed): each ends ``done`` (its change was made, once) "
              "or ``failed``\n(it was not made).", writes=True, python="recover",
              command="approvals recover"),
)
"""Every approvals request's row (no MCP tool: a human resolves approvals, not an agent)."""
