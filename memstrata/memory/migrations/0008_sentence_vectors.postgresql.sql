-- memstrata migration 0008: a vector per sentence of a record of several sentences (the relevance gate reads them, postgresql). Never edit; add a new migration.

ALTER TABLE memory_vectors ADD COLUMN sentences BYTEA
