-- memstrata migration 0001: initial schema (sqlite). Never edit; add a new migration.

CREATE TABLE memories (
	id VARCHAR(32) NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	scope VARCHAR(64) NOT NULL, 
	type VARCHAR(16) NOT NULL, 
	content TEXT NOT NULL, 
	context TEXT, 
	content_hash VARCHAR(32) NOT NULL, 
	subject VARCHAR(256), 
	attribute VARCHAR(256), 
	value TEXT, 
	slot_key VARCHAR(32), 
	confidence FLOAT NOT NULL, 
	importance FLOAT NOT NULL, 
	source VARCHAR(32) NOT NULL, 
	session_id VARCHAR(256), 
	task_id VARCHAR(256), 
	step_id VARCHAR(256), 
	created_at FLOAT NOT NULL, 
	updated_at FLOAT NOT NULL, 
	valid_from FLOAT NOT NULL, 
	valid_to FLOAT, 
	last_accessed_at FLOAT, 
	access_count INTEGER NOT NULL, 
	expires_at FLOAT, 
	status VARCHAR(24) NOT NULL, 
	pinned BOOLEAN NOT NULL, 
	supersedes VARCHAR(32), 
	superseded_by VARCHAR(32), 
	conflict_group VARCHAR(32), 
	metadata JSON NOT NULL, 
	seq BIGINT NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_memories_status_expiry ON memories (status, expires_at);

CREATE INDEX ix_memories_user_group ON memories (user_id, conflict_group);

CREATE INDEX ix_memories_user_hash ON memories (user_id, content_hash);

CREATE INDEX ix_memories_user_seq ON memories (user_id, seq);

CREATE INDEX ix_memories_user_slot ON memories (user_id, scope, slot_key);

CREATE TABLE memory_events (
	id INTEGER NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	memory_id VARCHAR(32), 
	action VARCHAR(32) NOT NULL, 
	reason TEXT NOT NULL, 
	at FLOAT NOT NULL, 
	seq BIGINT, 
	details JSON NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_events_user_memory ON memory_events (user_id, memory_id);

CREATE INDEX ix_events_user_seq ON memory_events (user_id, seq);

CREATE TABLE memstrata_meta (
	"key" VARCHAR(64) NOT NULL, 
	value TEXT NOT NULL, 
	PRIMARY KEY ("key")
);

CREATE TABLE tasks (
	task_id VARCHAR(64) NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	scope VARCHAR(64) NOT NULL, 
	goal JSON NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	state JSON NOT NULL, 
	feedback JSON, 
	created_at FLOAT NOT NULL, 
	updated_at FLOAT NOT NULL, 
	finished_at FLOAT, 
	version INTEGER NOT NULL, 
	PRIMARY KEY (task_id)
);

CREATE INDEX ix_tasks_user_status ON tasks (user_id, status);

CREATE TABLE turns (
	id INTEGER NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	session_id VARCHAR(256) NOT NULL, 
	role VARCHAR(32) NOT NULL, 
	text TEXT NOT NULL, 
	at FLOAT NOT NULL, 
	metadata JSON NOT NULL, 
	PRIMARY KEY (id)
);

CREATE INDEX ix_turns_user_session ON turns (user_id, session_id, id);

CREATE TABLE users (
	user_id VARCHAR(256) NOT NULL, 
	seq BIGINT NOT NULL, 
	generation VARCHAR(32) NOT NULL, 
	embed_model VARCHAR(200), 
	created_at FLOAT NOT NULL, 
	PRIMARY KEY (user_id)
);

CREATE TABLE memory_vectors (
	memory_id VARCHAR(32) NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	dim INTEGER NOT NULL, 
	vector BLOB NOT NULL, 
	PRIMARY KEY (memory_id), 
	FOREIGN KEY(memory_id) REFERENCES memories (id) ON DELETE CASCADE
);

CREATE TABLE task_steps (
	id INTEGER NOT NULL, 
	task_id VARCHAR(64) NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	step_no INTEGER NOT NULL, 
	payload JSON NOT NULL, 
	at FLOAT NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_task_steps_task_step UNIQUE (task_id, step_no), 
	FOREIGN KEY(task_id) REFERENCES tasks (task_id) ON DELETE CASCADE
);
