-- Schema version 8 is another change's; this empty step only keeps the numbering whole on a tree
-- that lacks it. Where that change's 008_*.sql is present it sorts first and this is skipped
-- (its version is already 8); delete this file then.
SELECT 1;
