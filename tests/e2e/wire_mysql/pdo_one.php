<?php
// One statement with PHP's PDO over mysqlnd (its own MySQL protocol), its parameter the request's id:
// argv: port, id, emulate (1: the value in the text, 0: a native prepare with a binary bind), table.
$db = new PDO("mysql:host=127.0.0.1;port={$argv[1]};dbname=txray", "root", "",
              [PDO::ATTR_EMULATE_PREPARES => $argv[3] === "1", PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
try {
  $s = $db->prepare("SELECT name FROM {$argv[4]} WHERE id = ?");
  $s->execute([(int)$argv[2]]);
  echo $argv[2], " ", $s->fetchColumn(), "\n";
} catch (PDOException $e) {
  echo $argv[2], " error ", $e->errorInfo[1], "\n";
}
