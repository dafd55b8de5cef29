-- memstrata migration 0005: task ids are scoped by user - tasks' key is (user_id, task_id) and steps reference it (postgresql). Never edit; add a new migration.

ALTER TABLE task_steps DROP CONSTRAINT task_steps_task_id_fkey;

ALTER TABLE task_steps DROP CONSTRAINT uq_task_steps_task_step;

ALTER TABLE tasks DROP CONSTRAINT tasks_pkey;

ALTER TABLE tasks ADD PRIMARY KEY (user_id, task_id);

UPDATE task_steps SET user_id = tasks.user_id FROM tasks WHERE tasks.task_id = task_steps.task_id AND task_steps.user_id <> tasks.user_id;

ALTER TABLE task_steps ADD CONSTRAINT uq_task_steps_task_step UNIQUE (user_id, task_id, step_no);

ALTER TABLE task_steps ADD FOREIGN KEY(user_id, task_id) REFERENCES tasks (user_id, task_id) ON DELETE CASCADE
