// The peers' data, the same catalogue as ours: the afternoon app's SQLite file (pets, the key,
// the stock of the pet the orders buy) and json-server's db.json.
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { hashKey, openAfternoonDb } from './afternoon.ts'
import { writeJsonServerDb, type PeerPet } from './json-server.ts'

export interface PeerFiles {
  afternoonFile: string
  /** The afternoon app's API key, with a quota no run reaches. */
  afternoonKey: string
  jsonServerFile: string
}

export async function seedPeers (dir: string, pets: PeerPet[], orderPetId: number, stock: number): Promise<PeerFiles> {
  const afternoonFile = path.join(dir, 'afternoon.db')
  const afternoonKey = `afternoon_${randomBytes(16).toString('hex')}`
  const db = openAfternoonDb(afternoonFile)
  // One transaction: the seed's one fsync.
  db.exec('BEGIN')
  const insert = db.prepare('INSERT INTO pets (id, name, category_id, status, stock) VALUES (?, ?, ?, ?, ?)')
  for (const pet of pets) {
    const units = pet.id === orderPetId ? stock : pet.status === 'available' ? 1 : 0
    insert.run(pet.id, pet.name, pet.categoryId, pet.status, units)
  }
  db.prepare('INSERT INTO api_keys (key_hash, per_minute) VALUES (?, ?)').run(hashKey(afternoonKey), 1_000_000_000)
  db.exec('COMMIT')
  db.close()
  const jsonServerFile = path.join(dir, 'db.json')
  await writeJsonServerDb(jsonServerFile, pets)
  return { afternoonFile, afternoonKey, jsonServerFile }
}
