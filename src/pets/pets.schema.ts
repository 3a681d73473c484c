// The public contract of pets: the Pet resource and our bounds (docs/product.md section 5).
// Examples name the records `serve --sample-data` loads (pet 1 is Rex, a dog; category 1 is
// Dogs), so a test generated from the document works against such a server.
import { Type, type Static } from 'typebox'
import { IdParam, Int64, Name, NO_CONTROLS, PageQuery, paramDescription, StringEnum } from '../shared/schemas.ts'

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export const PetStatusSchema = StringEnum(PET_STATUSES, { title: 'PetStatus', description: 'Status of the pet.', examples: ['available'] })
export type PetStatus = Static<typeof PetStatusSchema>

const petIdParams = (example: number) => Type.Object({ petId: IdParam('The pet id.', [example]) }, { additionalProperties: false })
export const PetIdParams = petIdParams(1)
/** deletePet's example deletes a pet no other example uses (13, Shelly in the sample data). */
export const DeletePetIdParams = petIdParams(13)

export const NewPetSchema = Type.Object({
  name: Name("The animal's name, 1 to 100 characters."),
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
  status: Type.Optional(PetStatusSchema)
}, {
  title: 'NewPet',
  examples: [{ name: 'Fido', categoryId: 1, status: 'available' }],
  additionalProperties: false,
  description: 'The input shape of a pet. A pet created without `status` is `available`; on PUT, a missing `status` keeps the current one (status follows the stock rules).'
})
export type NewPet = Static<typeof NewPetSchema>

export const PetPatchSchema = Type.Object({
  name: Type.Optional(Name("The animal's name, 1 to 100 characters.")),
  categoryId: Type.Optional(Int64({ description: 'Identifier of the category the animal belongs to.' })),
  status: Type.Optional(PetStatusSchema)
}, { title: 'PetPatch', additionalProperties: false, minProperties: 1, description: 'The fields to change; at least one.', examples: [{ name: 'Rex' }] })
export type PetPatch = Static<typeof PetPatchSchema>

export const PetSchema = Type.Object({
  id: Int64({ description: 'Unique identifier, assigned on creation.' }),
  name: Type.String({ description: "The animal's name." }),
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
  status: PetStatusSchema
}, { title: 'Pet', additionalProperties: false, description: 'A pet. `status` is always present in responses.', examples: [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }] })
export type Pet = Static<typeof PetSchema>

export const PetsSchema = Type.Array(PetSchema, {
  title: 'Pets',
  description: 'An array of Pet objects.',
  examples: [[
    { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
    { id: 2, name: 'Bella', categoryId: 1, status: 'available' }
  ]]
})

export const PetListQuery = Type.Object({
  id: Type.Optional(Type.Array(Int64(), {
    minItems: 1,
    maxItems: 100,
    examples: [[1]],
    description: paramDescription('Only pets with these ids; repeat the parameter for several (`?id=1&id=2`), at most 100. `GET /pets?id={petId}` is the successor of the deprecated `GET /pets/{petId}`.')
  })),
  status: Type.Optional(PetStatusSchema),
  categoryId: Type.Optional(IdParam('Only pets of this category.', [1])),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_CONTROLS, description: 'Case-insensitive substring of the name; no control characters.', examples: ['re'] })),
  ...PageQuery
}, { additionalProperties: false })
export type PetListQuery = Static<typeof PetListQuery>
