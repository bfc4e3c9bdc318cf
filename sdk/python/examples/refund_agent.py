"""A refund agent whose approvals outlive it.

    python3 refund_agent.py request ORDER AMOUNT   # call; park it if a human must decide
    python3 refund_agent.py resume [SECONDS]       # later, from any process: finish parked calls
    python3 refund_agent.py cancel ORDER REASON    # withdraw the order's parked call

CHIO_URL, CHIO_KEY and CHIO_CAPABILITY say where chiod is and who the agent
is. Parked calls live in a SQLite table (workflow.db), standing in for your
workflow engine: a Temporal signal, a LangGraph interrupt, a job queue.
"""

import asyncio
import secrets
import sqlite3
import sys

import chio


def workflow_db() -> sqlite3.Connection:
    db = sqlite3.connect("workflow.db")
    db.execute(
        "CREATE TABLE IF NOT EXISTS parked (approval_id TEXT PRIMARY KEY,"
        " order_id TEXT, deadline TEXT, state TEXT NOT NULL DEFAULT 'pending')"
    )
    db.execute("CREATE TABLE IF NOT EXISTS calls (order_id TEXT PRIMARY KEY, request_id TEXT NOT NULL)")
    return db


def request_id_for(order_id: str) -> str:
    # One request id per order, made once and kept: running this step again
    # never refunds twice. The random part keeps other agents from using the
    # id first (request ids are one namespace for every agent of a chiod).
    with workflow_db() as db:
        db.execute(
            "INSERT OR IGNORE INTO calls (order_id, request_id) VALUES (?, ?)",
            (order_id, f"refund-order-{order_id}-{secrets.token_hex(8)}"),
        )
        return db.execute("SELECT request_id FROM calls WHERE order_id = ?", (order_id,)).fetchone()[0]


async def request(order_id: str, amount: int) -> None:
    client = chio.Client.from_env()
    result = await client.call_tool(
        server="demo",
        tool="issue_refund",
        arguments={"customer_id": "cust-9012", "amount": amount, "currency": "USD"},
        governed_intent={
            "purpose": f"Customer requested refund for order #{order_id}",
            "max_amount": {"units": amount, "currency": "USD"},
        },
        request_id=request_id_for(order_id),
    )
    if isinstance(result, chio.PendingApproval):
        with workflow_db() as db:
            db.execute(
                "INSERT OR IGNORE INTO parked (approval_id, order_id, deadline) VALUES (?, ?, ?)",
                (result.approval_request_id, order_id, str(result.deadline)),
            )
        print(f"order {order_id}: parked {result.approval_request_id} until {result.deadline}: {result.summary}")
        return
    report(order_id, result)


async def resume(seconds: float) -> None:
    # A new process: nothing but the agent's key and the parked ids.
    client = chio.Client.from_env()
    with workflow_db() as db:
        rows = db.execute("SELECT approval_id, order_id FROM parked WHERE state = 'pending'").fetchall()
    for approval_id, order_id in rows:
        try:
            result = await client.await_approval(approval_id, timeout=seconds)
        except chio.TimedOut:
            print(f"order {order_id}: still waiting for a human")
            continue
        report(order_id, result)
        with workflow_db() as db:
            db.execute("UPDATE parked SET state = ? WHERE approval_id = ?", (result.status, approval_id))


async def cancel(order_id: str, reason: str) -> None:
    # The customer withdrew the order: nobody needs to decide any more.
    client = chio.Client.from_env()
    with workflow_db() as db:
        rows = db.execute("SELECT approval_id FROM parked WHERE order_id = ? AND state = 'pending'", (order_id,)).fetchall()
    for (approval_id,) in rows:
        try:
            result = await client.cancel(approval_id, reason)  # signed by the agent key
        except chio.Conflict:
            # A human decided first, and that decision stands: see how it ended.
            result = await client.await_approval(approval_id)
        report(order_id, result)
        with workflow_db() as db:
            db.execute("UPDATE parked SET state = ? WHERE approval_id = ?", (result.status, approval_id))


def report(order_id: str, result: chio.Allowed | chio.ToolDenied) -> None:
    if isinstance(result, chio.ToolDenied) and result.status == "cancelled":
        print(f"order {order_id}: cancelled: {result.reason}")
    elif isinstance(result, chio.ToolDenied):
        print(f"order {order_id}: {result.status} by {result.guard}: {result.reason}")
    elif result.failed:
        # execution: "tool_error" (it ran and failed), "not_delivered" (it never
        # saw the call) or "unknown" (it may have run: check before retrying).
        print(f"order {order_id}: the refund failed ({result.execution}): {result.tool_error}")
    else:
        by = f" (approved by {result.approval.approver_name})" if result.approval else ""
        print(f"order {order_id}: refund {result.output['refund_id']} issued{by}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["request"] and len(sys.argv) == 4:
        asyncio.run(request(sys.argv[2], int(sys.argv[3])))
    elif sys.argv[1:2] == ["resume"]:
        asyncio.run(resume(float(sys.argv[2]) if len(sys.argv) > 2 else 600))
    elif sys.argv[1:2] == ["cancel"] and len(sys.argv) == 4:
        asyncio.run(cancel(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
