-- A registered tool's presentation: its title, annotations, output schema
-- and icons, as one JSON object (toolgate.Presentation); '' when it
-- declared none of them.

ALTER TABLE tools ADD COLUMN presentation TEXT NOT NULL DEFAULT '';
