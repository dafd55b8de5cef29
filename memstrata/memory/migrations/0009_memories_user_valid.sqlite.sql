-- memstrata migration 0009: the user's records newest first (recall's statements of an asked attribute and its slot values walk it instead of every user's active rows). Never edit; add a new migration.

CREATE INDEX ix_memories_user_valid ON memories (user_id, valid_from)
