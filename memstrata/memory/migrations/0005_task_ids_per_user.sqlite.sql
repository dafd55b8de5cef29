-- memstrata migration 0005: task ids are scoped by user - tasks' key is (user_id, task_id) and steps reference it. Never edit; add a new migration.
-- SQLite cannot change a primary key in place: the two tables are rebuilt. The new step table
-- references the new task table first, so dropping the old tables cascades to nothing; the
-- renames then rewrite that reference to "tasks".

CREATE TABLE tasks_new (
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
	PRIMARY KEY (user_id, task_id)
);

INSERT INTO tasks_new (task_id, user_id, scope, goal, status, state, feedback, created_at, updated_at, finished_at, version)
SELECT task_id, user_id, scope, goal, status, state, feedback, created_at, updated_at, finished_at, version FROM tasks;

CREATE TABLE task_steps_new (
	id INTEGER NOT NULL, 
	task_id VARCHAR(64) NOT NULL, 
	user_id VARCHAR(256) NOT NULL, 
	step_no INTEGER NOT NULL, 
	payload JSON NOT NULL, 
	at FLOAT NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_task_steps_task_step UNIQUE (user_id, task_id, step_no), 
	FOREIGN KEY(user_id, task_id) REFERENCES tasks_new (user_id, task_id) ON DELETE CASCADE
);

INSERT INTO task_steps_new (id, task_id, user_id, step_no, payload, at)
SELECT s.id, s.task_id, t.user_id, s.step_no, s.payload, s.at FROM task_steps s JOIN tasks t ON t.task_id = s.task_id;

DROP TABLE task_steps;

DROP TABLE tasks;

ALTER TABLE tasks_new RENAME TO tasks;

ALTER TABLE task_steps_new RENAME TO task_steps;

CREATE INDEX ix_tasks_user_status ON tasks (user_id, status);
