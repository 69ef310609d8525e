"""Webhooks: a tenant's endpoints and the outbox of their deliveries.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24

``webhook_endpoint`` holds a tenant's HTTPS endpoints, the events each wants, whether it
opted in to content, and its signing secret (kept as it is: HMAC-SHA256 needs the secret
itself to sign, unlike an API key, which only needs its hash to be checked).
``webhook_delivery`` is the outbox: one row per (event, endpoint), written in the
transaction of the change that caused the event, sent by ``memq.webhook_delivery`` on its
own queue, kept after it was delivered or after its last attempt failed
(``memq webhooks deliveries``). See docs/webhooks.md.
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE webhook_endpoint (
            id          uuid PRIMARY KEY,
            tenant_id   text NOT NULL,
            url         text NOT NULL,
            events      text[] NOT NULL,
            content     boolean NOT NULL DEFAULT false,
            secret      text NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX webhook_endpoint_tenant ON webhook_endpoint (tenant_id)")
    op.execute(
        """
        CREATE TABLE webhook_delivery (
            id              uuid PRIMARY KEY,
            endpoint_id     uuid NOT NULL REFERENCES webhook_endpoint (id) ON DELETE CASCADE,
            tenant_id       text NOT NULL,
            event_id        uuid NOT NULL,
            event           text NOT NULL,
            conversation_id text,
            payload         jsonb NOT NULL,
            status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
            attempts        integer NOT NULL DEFAULT 0,
            last_error      text,
            last_status     integer,
            created_at      timestamptz NOT NULL DEFAULT now(),
            next_attempt_at timestamptz NOT NULL DEFAULT now(),
            published_at    timestamptz,
            finished_at     timestamptz
        )
        """
    )
    op.execute("CREATE INDEX webhook_delivery_due ON webhook_delivery (next_attempt_at) WHERE status = 'pending'")
    op.execute("CREATE INDEX webhook_delivery_tenant ON webhook_delivery (tenant_id, created_at)")
    op.execute("CREATE INDEX webhook_delivery_conversation ON webhook_delivery (tenant_id, conversation_id)")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS webhook_delivery")
    op.execute("DROP TABLE IF EXISTS webhook_endpoint")
