-- memstrata migration 0004: index-file cleanups still owed to erased users (file key only, postgresql). Never edit; add a new migration.

CREATE TABLE pending_erasures (
	file_key VARCHAR(64) NOT NULL, 
	requested_at FLOAT NOT NULL, 
	PRIMARY KEY (file_key)
);
