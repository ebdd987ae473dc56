-- A name for the timeline's string table.
SELECT str FROM strings WHERE id = ?1;
