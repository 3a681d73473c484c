// A small, believable catalogue for `serve --sample-data` on a new database.
import type { Stores } from './storage/stores.ts'

const CATALOGUE: { name: string; description: string; pets: [string, 'available' | 'pending' | 'sold'][] }[] = [
  { name: 'Dogs', description: 'Loyal companions of every size.', pets: [['Rex', 'available'], ['Bella', 'available'], ['Max', 'pending'], ['Luna', 'available']] },
  { name: 'Cats', description: 'Independent, curious and fond of naps.', pets: [['Milo', 'available'], ['Nala', 'sold'], ['Oliver', 'available']] },
  { name: 'Birds', description: 'Songbirds and talkers.', pets: [['Kiwi', 'available'], ['Rio', 'available']] },
  { name: 'Fish', description: 'Freshwater aquarium fish.', pets: [['Bubbles', 'available'], ['Nemo', 'available']] },
  { name: 'Reptiles', description: 'Lizards and tortoises for calm homes.', pets: [['Spike', 'available'], ['Shelly', 'pending']] }
]

/** Loads the sample catalogue when the database has no category yet; returns whether it did. */
export async function loadSampleData (stores: Stores): Promise<boolean> {
  if ((await stores.categories.listCategories({ afterId: null, limit: 1 })).length > 0) return false
  for (const category of CATALOGUE) {
    const { id } = await stores.categories.createCategory({ name: category.name, description: category.description })
    for (const [name, status] of category.pets) {
      const { record } = await stores.pets.createPet({ name, categoryId: id, status }, null)
      // A new pet has stock 1 (rule 1); a reserved or sold one has none left. Setting 0 keeps
      // a pending or sold pet as it is (rule 6 only changes an available one).
      if (status !== 'available') await stores.inventory.setStock(record.id, 0, null)
    }
  }
  return true
}
