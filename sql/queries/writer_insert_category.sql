-- One slice category (enum hm_cat), stored at open (store/writer.c).
INSERT INTO categories (id, name) VALUES (?1, ?2);
