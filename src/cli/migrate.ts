// petstore migrate: applies the schema migrations of the configured database, then exits.
import { parseArgs } from 'node:util'
import { describeDatabase, loadConfig } from '../config.ts'
import { openStores } from '../infra.ts'
import { databaseWaitNote, type Io } from './io.ts'

export async function migrate (args: string[], io: Io): Promise<number> {
  parseArgs({ args, strict: true, options: {} })
  const config = loadConfig(io.env)
  const stores = await openStores(config, { migrate: true, onWait: databaseWaitNote(io, 'migrate') })
  await stores.close()
  io.out(`${describeDatabase(config.database)}: schema is up to date`)
  return 0
}
